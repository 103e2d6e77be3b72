package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/barrage-load/barrage/internal/barrage"
)

// loadFlags are the flags that change a script's load for one run, local or on agents.
type loadFlags struct {
	vus      *int
	duration *time.Duration
	rate     *float64
	stages   stagesFlag
}

func addLoadFlags(fs *flag.FlagSet) *loadFlags {
	l := &loadFlags{
		vus:      fs.Int("vus", 0, "virtual users (closed model), or max VUs with --rate or --stage; overrides the script"),
		duration: fs.Duration("duration", 0, "run duration; overrides the script"),
		rate:     fs.Float64("rate", 0, "arrival rate in iterations per second: runs the open model"),
	}
	fs.Var(&l.stages, "stage", "a stage of the open model in place of the script's load, repeated in order: DURATION:RATE holds RATE\n"+
		"iterations/s for DURATION, DURATION:to:RATE ramps there from the stage before (0 before the first);\n"+
		"for example --stage 30s:to:200 --stage 2m:200 --stage 30s:to:0")
	return l
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
		parts[i] = fmt.Sprintf("%s:%s%g", st.Duration, ramp, st.To)
	}
	return strings.Join(parts, ",")
}

func (s *stagesFlag) Set(v string) error {
	d, rest, ok := strings.Cut(v, ":")
	if !ok {
		return fmt.Errorf("want DURATION:RATE or DURATION:to:RATE, as 30s:200 or 30s:to:200")
	}
	dur, err := time.ParseDuration(d)
	if err != nil {
		return fmt.Errorf("duration %q: want a duration such as 30s or 2m", d)
	}
	st := barrage.Stage{Duration: dur}
	if r, ok := strings.CutPrefix(rest, "to:"); ok {
		st.Ramp, rest = true, r
	}
	if st.To, err = strconv.ParseFloat(strings.TrimSuffix(rest, "/s"), 64); err != nil {
		return fmt.Errorf("rate %q: want iterations per second, such as 200 or 200/s", rest)
	}
	*s = append(*s, st)
	return nil
}
