// Package pipeline runs a script and tells its result: the engine's load, the seconds as they
// come, the target's monitors beside them, and the result's document, the same for a local run,
// an agent's shard and each level of a concurrency sweep.
package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/summary"
	"github.com/barrage-load/barrage/internal/sweep"
)

// SweepOptions are a sweep's: the concurrencies, each step's length and the engine's options for
// each step (their load is replaced by each level's).
type SweepOptions struct {
	VUs  []int
	Step time.Duration
	// Engine are the engine's options for every level; its OnSecond, when set, receives every
	// level's seconds numbered on the sweep's schedule (from Start), one level after another.
	Engine engine.Options
	// Start is when the first level starts (zero: at once); each next one starts on the next
	// whole second of that schedule after the level before it ended.
	Start time.Time
	// OnLevel, when set, receives each level as it ends.
	OnLevel func(sweep.Level)
}

// Sweep sweeps s at each of o.VUs in turn, for o.Step each, in the closed model (every VU of a
// level started at once, the script's think times kept, its own load replaced), then fits and judges the levels. A
// canceled context ends the sweep with the levels run so far.
func Sweep(ctx context.Context, s *script.Script, o SweepOptions) (*sweep.Result, error) {
	if len(o.VUs) == 0 {
		return nil, errors.New("a sweep needs at least one level")
	}
	var levels []sweep.Level
	start := o.Start
	if start.IsZero() {
		start = time.Now()
	}
	var offset int64 // the schedule's second the level starts on
	for _, n := range o.VUs {
		if ctx.Err() != nil {
			break
		}
		lv, err := sweepLevel(ctx, s, n, o, start.Add(time.Duration(offset)*time.Second), offset)
		offset = max(offset+1, int64(math.Ceil(time.Since(start).Seconds())))
		if err != nil {
			return sweep.NewResult(s.Name, o.Step, levels), fmt.Errorf("level %d VUs: %w", n, err)
		}
		levels = append(levels, lv)
		if o.OnLevel != nil {
			o.OnLevel(lv)
		}
	}
	return sweep.NewResult(s.Name, o.Step, levels), nil
}

// sweepLevel runs the level of n VUs from levelStart, the second offset of the sweep's schedule.
func sweepLevel(ctx context.Context, s *script.Script, n int, o SweepOptions, levelStart time.Time, offset int64) (sweep.Level, error) {
	level := *s
	level.Load.Model, level.Load.VUs, level.Load.Duration, level.Load.Iterations = script.Closed, n, o.Step, 0
	level.Load.Stages, level.Load.MaxVUs, level.Load.RampUp = nil, 0, 0
	level.Thresholds = nil // a step is measured, not judged
	opts := o.Engine
	opts.VUs, opts.Duration, opts.Rate, opts.Stages, opts.Sweep = 0, 0, 0, nil, nil
	opts.Start = levelStart
	skip := int64(0)
	if o.Step > 2*time.Second {
		skip = 1
	}
	measured := &metrics.Snapshot{}
	var lv sweep.Level
	opts.OnSecond = func(sec run.Second) {
		if sec.Index == 0 && sec.Health.ActiveVUs < int64(n) {
			lv.LateStart = true
		}
		if sec.Index >= skip {
			measured.Merge(sec.Snapshot)
		}
		if o.Engine.OnSecond != nil {
			sec.Index += offset
			o.Engine.OnSecond(sec)
		}
	}
	r, err := engine.Run(ctx, &level, opts)
	if r == nil {
		return sweep.Level{}, err
	}
	st := measured.Requests()
	secs := max(measured.Duration.Seconds(), 1e-9)
	lv.VUs, lv.Seconds, lv.Requests, lv.RPS = n, measured.Duration.Seconds(), st.Requests, float64(st.Requests)/secs
	lv.P50MS, lv.P95MS, lv.P99MS = summary.Millis(st.Latency.Quantile(0.5)), summary.Millis(st.Latency.Quantile(0.95)), summary.Millis(st.Latency.Quantile(0.99))
	if st.Requests > 0 {
		lv.ErrorRate = float64(st.Failed()) / float64(st.Requests)
	}
	lv.Reliability = 1 - lv.ErrorRate
	lv.OKRPS = float64(st.Requests-st.Failed()) / secs
	lv.Verdict = summary.VerdictOf(r.Verdict, r.Model)
	if r.Stop.Reason != run.Completed {
		lv.Stopped = r.Stop.String()
		lv.LateStart = false // a level cut short is not judged
	}
	return lv, nil
}

// marshalLevels is levels as an account carries them, with err, the sweep's own, unless the
// levels do not encode.
func marshalLevels(levels []sweep.Level, err error) (json.RawMessage, error) {
	b, merr := json.Marshal(levels)
	if merr != nil {
		return nil, fmt.Errorf("encode the sweep's levels: %w", merr)
	}
	return b, err
}
