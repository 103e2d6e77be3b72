package portaltest

import (
	_ "embed"
	"fmt"
	"strings"
)

// axeSource is axe-core's axe.min.js (MPL-2.0, testdata/AXE-LICENSE), from npm at the
// Makefile's AXE_VERSION: `make axe-assets` refreshes it.
//
//go:embed testdata/axe.min.js
var axeSource string

// Violation is a rule of axe-core that the page breaks, and where.
type Violation struct {
	ID      string `json:"id"`
	Impact  string `json:"impact"` // minor, moderate, serious or critical
	Help    string `json:"help"`
	HelpURL string `json:"helpUrl"`
	Nodes   []struct {
		Target  []string `json:"target"`
		Summary string   `json:"summary"`
	} `json:"nodes"`
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s <%s>", v.ID, v.Impact, v.Help, v.HelpURL)
	for _, n := range v.Nodes {
		fmt.Fprintf(&b, "\n    %s: %s", strings.Join(n.Target, " "), strings.ReplaceAll(n.Summary, "\n", " "))
	}
	return b.String()
}

// Violations runs axe-core on the page as it is (WCAG 2 A and AA, and axe's best practices)
// and returns every violation it finds, whatever its impact. axe is put into the page through
// the DevTools protocol, which the page's Content-Security-Policy does not govern.
func (b *Browser) Violations() []Violation {
	b.t.Helper()
	if !Eval[bool](b, `typeof axe === "object"`) {
		Eval[struct{}](b, axeSource)
	}
	return Eval[[]Violation](b, `axe.run(document, { runOnly: ["wcag2a", "wcag2aa", "best-practice"] }).then((r) =>
		r.violations.map((v) => ({ id: v.id, impact: v.impact || "", help: v.help, helpUrl: v.helpUrl,
			nodes: v.nodes.map((n) => ({ target: n.target.map(String), summary: n.failureSummary || "" })) })))`)
}

// Axe fails the test when axe-core finds a serious or critical violation on the page; it logs
// the lesser ones.
func (b *Browser) Axe() {
	b.t.Helper()
	var bad []string
	for _, v := range b.Violations() {
		if v.Impact == "serious" || v.Impact == "critical" {
			bad = append(bad, v.String())
		} else {
			b.t.Logf("axe, on %s at %s px: %s", b.Title(), b.screen.Name, v)
		}
	}
	if len(bad) > 0 {
		b.t.Fatalf("axe finds on %s at %s px:\n  %s", b.Title(), b.screen.Name, strings.Join(bad, "\n  "))
	}
}
