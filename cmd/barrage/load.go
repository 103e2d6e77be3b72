package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/quantity"
)

// loadFlags are the flags that change a script's load for one run, local or on agents.
type loadFlags struct {
	vus      *int
	duration *time.Duration
	rate     *float64
	stages   stagesFlag
}

func addLoadFlags(fs *flag.FlagSet) *loadFlags {
	l := &loadFlags{vus: new(int), duration: new(time.Duration), rate: new(float64)}
	// Each is above 0 when given: 0 would read as "not given" and silently keep the script's.
	positive := func(name, usage string, parse func(string) (bool, error)) {
		fs.Func(name, usage, func(v string) error {
			ok, err := parse(v)
			if err == nil && !ok {
				err = fmt.Errorf("must be above 0 (leave --%s out to keep the script's)", name)
			}
			return err
		})
	}
	positive("vus", "virtual users (closed model), or max VUs with --rate or --stage; overrides the script", func(v string) (bool, error) {
		n, err := strconv.Atoi(v)
		*l.vus = n
		return n > 0, err
	})
	positive("duration", "run duration, as 30s or 2m; overrides the script", func(v string) (bool, error) {
		d, err := quantity.ParseDuration(v)
		*l.duration = d
		return d > 0, err
	})
	positive("rate", "arrival rate, iterations per second (200) or per unit of time (200/s, 90/m): runs the open model", func(v string) (bool, error) {
		r, err := quantity.ParsePerSecond(v)
		*l.rate = r
		return r > 0, err
	})
	fs.Var(&l.stages, "stage", "a stage of the open model in place of the script's load, repeated in order: DURATION:RATE holds RATE\n"+
		"iterations/s (200, or 200/s, 90/m) for DURATION, DURATION:to:RATE ramps there from the stage before (0 before the first);\n"+
		"for example --stage 30s:to:200 --stage 2m:200 --stage 30s:to:0")
	return l
}

// chosenVUs is what to say when the flags made a script's load open (--rate, --stage) without
// --vus: the engine chose its max VUs (the script's open bound, else its VUs with 100 at least),
// which the script did not say for this load; empty otherwise.
func (l *loadFlags) chosenVUs(maxVUs int) string {
	if *l.vus > 0 || (*l.rate == 0 && len(l.stages) == 0) || maxVUs <= 0 {
		return ""
	}
	return fmt.Sprintf("The open model may use up to %d VUs at once (max_vus): --vus N sets another.", maxVUs)
}

// overrides are the flags' overrides, checked.
func (l *loadFlags) overrides() (barrage.LoadOverrides, error) {
	o := barrage.LoadOverrides{VUs: *l.vus, Duration: *l.duration, Rate: *l.rate, Stages: l.stages}
	if err := o.Validate(); err != nil {
		return o, usageError(err)
	}
	return o, nil
}

// stagesFlag collects --stage values.
type stagesFlag []barrage.Stage

func (s *stagesFlag) String() string {
	parts := make([]string, len(*s))
	for i, st := range *s {
		ramp := ""
		if st.Ramp {
			ramp = "to:"
		}
		parts[i] = quantity.FormatDuration(st.Duration) + ":" + ramp + quantity.FormatRate(st.To)
	}
	return strings.Join(parts, ",")
}

func (s *stagesFlag) Set(v string) error {
	d, rest, ok := strings.Cut(v, ":")
	if !ok {
		return fmt.Errorf("want DURATION:RATE or DURATION:to:RATE, as 30s:200 or 30s:to:200")
	}
	dur, err := quantity.ParseDuration(d)
	if err != nil {
		return fmt.Errorf("duration %q: %w", d, err)
	}
	st := barrage.Stage{Duration: dur}
	if r, ok := strings.CutPrefix(rest, "to:"); ok {
		st.Ramp, rest = true, r
	}
	if st.To, err = quantity.ParsePerSecond(rest); err != nil {
		return fmt.Errorf("rate %q: %w", rest, err)
	}
	*s = append(*s, st)
	return nil
}

// envFlag is -e NAME=VALUE, repeated: values of the script's environment variables for one run
// (k6's -e), by the name the script reads each from.
type envFlag map[string]string

func addEnvFlag(fs *flag.FlagSet) *envFlag {
	f := &envFlag{}
	fs.Var(f, "e", "NAME=VALUE: the value of the environment variable NAME that the script reads, for this run (repeat for several)")
	return f
}

func (f *envFlag) String() string { return fmt.Sprint(map[string]string(*f)) }

func (f *envFlag) Set(v string) error {
	name, val, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q: want NAME=VALUE", v)
	}
	(*f)[name] = val
	return nil
}

// lookup reads a name from the flag first, then through next (the process's environment, for
// a local run).
func (f *envFlag) lookup(next func(string) (string, bool)) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if v, ok := (*f)[name]; ok {
			return v, true
		}
		return next(name)
	}
}

// durationFlag defines a flag of a duration as fs.Duration does, read as --duration and
// scripts read one (quantity.ParseDuration): the same spellings, a negative one refused.
func durationFlag(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	fs.Var((*durationValue)(&value), name, usage)
	return &value
}

// durationValue is the flag.Value of durationFlag.
type durationValue time.Duration

func (d *durationValue) String() string { return quantity.FormatDuration(time.Duration(*d)) }

func (d *durationValue) Set(s string) error {
	v, err := quantity.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}
