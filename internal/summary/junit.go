package summary

import (
	"encoding/xml"
	"fmt"
	"io"

	"github.com/barrage-load/barrage/internal/barrage"
)

// JUnit writes d, the summary of run name, as a JUnit XML report for CI: a suite for the run's
// end (a test case that fails unless it finished), one for its thresholds (a case each, failed
// when it failed), one for its checks (a case each, failed when any response failed it), and,
// when it was held against its test's baseline, one for that comparison (a case per figure of
// each label, failed when it regressed).
func (d *Document) JUnit(w io.Writer, name string) error {
	suites := junitSuites{Name: "barrage: " + name, Time: d.ElapsedS}
	run := junitSuite{Name: "run"}
	end := junitCase{Class: "barrage.run", Name: "the run finished", Time: d.ElapsedS}
	if d.State != "" && d.State != barrage.RunFinished {
		end.Failure = &junitFailure{Type: "run", Message: fmt.Sprintf("the run ended %s: %s", d.State, d.Reason)}
	}
	run.add(end)
	if d.Incomplete != nil {
		run.add(junitCase{Class: "barrage.run", Name: "every agent's figures are whole",
			Failure: &junitFailure{Type: "incomplete", Message: fmt.Sprintf(
				"the figures stop short for %d agent(s); up to %d requests the target served may not be counted",
				len(d.Incomplete.Agents), d.Incomplete.MissingRequests)}})
	}
	suites.add(run)

	if len(d.Thresholds) > 0 {
		ths := junitSuite{Name: "thresholds"}
		for _, t := range d.Thresholds {
			c := junitCase{Class: "barrage.thresholds", Name: t.Check}
			if t.Request != "" {
				c.Name = t.Request + ": " + t.Check
			}
			if t.Over != "" {
				c.Name += " over " + t.Over
			}
			if !t.Passed {
				c.Failure = &junitFailure{Type: "threshold", Message: t.String()}
			}
			c.Out = t.String()
			ths.add(c)
		}
		suites.add(ths)
	}

	if len(d.Checks) > 0 {
		checks := junitSuite{Name: "checks"}
		for _, ch := range d.Checks {
			c := junitCase{Class: "barrage.checks", Name: ch.Request + ": " + ch.Name, Out: ch.String()}
			if ch.Fails > 0 {
				c.Failure = &junitFailure{Type: "check", Message: fmt.Sprintf("%d of %d responses failed it (%s passed)",
					ch.Fails, ch.Passes+ch.Fails, ch.Percent())}
			}
			checks.add(c)
		}
		suites.add(checks)
	}

	if b := d.Baseline; b != nil {
		base := junitSuite{Name: "baseline"}
		for _, lc := range append([]LabelComparison{b.Total}, b.Requests...) {
			for _, ch := range lc.Changes {
				text := fmt.Sprintf("%s: %s against %s in baseline run %s (%s)", ch.Metric, Figure(ch.Metric, ch.New),
					Figure(ch.Metric, ch.Base), b.RunID, ch.Explain())
				c := junitCase{Class: "barrage.baseline", Name: lc.Name + ": " + ch.Metric, Out: text}
				if ch.Verdict == Regressed {
					c.Failure = &junitFailure{Type: "regression", Message: text}
				}
				base.add(c)
			}
		}
		suites.add(base)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(suites); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// Explain is the change as people read it: how much, within what noise and tolerance, and the
// verdict.
func (ch Change) Explain() string {
	unit, scale := "%", 100.0
	if ch.Metric == "error_rate" {
		unit = " pt"
	}
	return fmt.Sprintf("%+.1f%s, noise ±%.1f%s, tolerance %.0f%s: %s", ch.Change*scale, unit, ch.Noise*scale, unit,
		ch.Tolerance*scale, unit, ch.Verdict)
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Time     float64      `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

func (s *junitSuites) add(t junitSuite) {
	s.Tests += t.Tests
	s.Failures += t.Failures
	s.Suites = append(s.Suites, t)
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
}

func (s *junitSuite) add(c junitCase) {
	s.Tests++
	if c.Failure != nil {
		s.Failures++
	}
	s.Cases = append(s.Cases, c)
}

type junitCase struct {
	Class   string        `xml:"classname,attr"`
	Name    string        `xml:"name,attr"`
	Time    float64       `xml:"time,attr,omitempty"`
	Failure *junitFailure `xml:"failure"`
	Out     string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Type    string `xml:"type,attr"`
	Message string `xml:"message,attr"`
}
