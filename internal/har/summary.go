package har

import (
	"fmt"
	"io"
	"strings"
)

// WriteSummary tells a person what the conversion made and found: `barrage import har` and
// `barrage record` print it on stderr.
func (r *Result) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "%s in %s", plural(r.Requests, "request"), plural(r.Groups, "group"))
	if r.AssetsLeftOut > 0 {
		fmt.Fprintf(w, "; %s left out (--assets keeps them)", plural(r.AssetsLeftOut, "static asset"))
	}
	if r.Skipped > 0 {
		fmt.Fprintf(w, "; %s that cannot be replayed left out", plural(r.Skipped, "entry"))
	}
	fmt.Fprintln(w)
	if len(r.Correlations) == 0 {
		fmt.Fprintln(w, "correlated: nothing (no value of a response went out in a later request)")
	} else {
		fmt.Fprintf(w, "correlated %s:\n", plural(len(r.Correlations), "value"))
	}
	for _, c := range r.Correlations {
		uses := make([]string, len(c.Uses))
		for i, u := range c.Uses {
			uses[i] = u.Request + " (" + u.Where + ")"
		}
		fmt.Fprintf(w, "  %s: %s %s of %s -> %s\n", c.Var, c.Kind, c.Expr, c.Request, strings.Join(shortList(uses, 3), ", "))
	}
	if len(r.Secrets) > 0 {
		fmt.Fprintf(w, "your secrets %s: the recording sent them; the script reads each as ${secret.NAME}\n", strings.Join(r.Secrets, ", "))
	}
	if len(r.DataBound) > 0 {
		fmt.Fprint(w, "from the data file:")
		for _, p := range r.DataBound {
			fmt.Fprintf(w, " %s (%s, %s)", p.Column, p.Request, p.Where)
		}
		fmt.Fprintln(w)
	}
	if len(r.Parameters) > 0 {
		fmt.Fprintln(w, "typed in, left as recorded (take them from a data file with --users FILE.csv; a password or token from a secret with --secret NAME):")
		for _, p := range r.Parameters[:min(len(r.Parameters), 10)] {
			fmt.Fprintf(w, "  %s, %s: %s\n", p.Request, p.Where, quoteValue(p.Value))
		}
		if n := len(r.Parameters) - 10; n > 0 {
			fmt.Fprintf(w, "  and %d more (the script's first lines list them)\n", n)
		}
	}
	for _, m := range r.Missed {
		fmt.Fprintf(w, "not correlated: %s in %s, %s: from %s; %s\n", quoteValue(m.Value), m.Request, m.Where, m.Source, m.Why)
	}
	for _, wn := range r.Warnings {
		fmt.Fprintln(w, "note:", wn)
	}
}
