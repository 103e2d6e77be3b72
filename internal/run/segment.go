package run

import (
	"fmt"
	"strconv"
	"strings"
)

// Segment is a shard's share of a run that several agents generate together. The run's
// countable things (virtual users, open-model arrivals, the iteration budget, sequential data
// rows) are numbered from 0 across the whole run, and the segment owns the i-th of them when
// From <= i mod Of < To. Shards whose segments tile [0, Of) own every index exactly once, so
// their VUs add up to the script's, each arrival of the schedule is sent by one agent, and each
// sequential row is used once across all of them.
//
// Striping, rather than cutting the range into contiguous blocks, keeps each shard's share even
// over time: k6's execution segments stripe for the same reason (a ramp-up's first VUs would
// otherwise all start on one agent). Weights are widths: an agent with twice the cores can own
// two slots of Of.
//
// The zero Segment is the whole run.
type Segment struct {
	From, To, Of int64
}

// Whole reports whether the segment is the whole run.
func (s Segment) Whole() bool { return s.Of == 0 || (s.From == 0 && s.To == s.Of) }

// Validate reports a segment that owns nothing or lies outside its run.
func (s Segment) Validate() error {
	if s == (Segment{}) {
		return nil
	}
	if s.Of <= 0 || s.From < 0 || s.To > s.Of || s.From >= s.To {
		return fmt.Errorf("segment %s: want 0 <= from < to <= of", s)
	}
	return nil
}

// Owns reports whether the segment owns the run's i-th index (from 0).
func (s Segment) Owns(i int64) bool {
	if s.Whole() {
		return true
	}
	r := i % s.Of
	return r >= s.From && r < s.To
}

// Scale returns how many of the run's first n indexes the segment owns: its share of n VUs,
// of an iteration budget, of n rows.
func (s Segment) Scale(n int64) int64 {
	if s.Whole() || n <= 0 {
		return max(n, 0)
	}
	w := s.To - s.From
	return n/s.Of*w + min(max(n%s.Of-s.From, 0), w)
}

// Nth returns the run-wide index of the segment's k-th index (from 0): the row a shard's k-th
// sequential draw takes.
func (s Segment) Nth(k int64) int64 {
	if s.Whole() {
		return k
	}
	w := s.To - s.From
	return k/w*s.Of + s.From + k%w
}

// String is "from:to/of", or "whole"; ParseSegment reads it back.
func (s Segment) String() string {
	if s == (Segment{}) {
		return "whole"
	}
	return fmt.Sprintf("%d:%d/%d", s.From, s.To, s.Of)
}

// ParseSegment reads a segment written as "from:to/of" (or "whole").
func ParseSegment(text string) (Segment, error) {
	if text == "" || text == "whole" {
		return Segment{}, nil
	}
	span, of, ok1 := strings.Cut(text, "/")
	from, to, ok2 := strings.Cut(span, ":")
	if !ok1 || !ok2 {
		return Segment{}, fmt.Errorf("segment %q: want from:to/of", text)
	}
	var s Segment
	var err error
	for _, f := range []struct {
		dst  *int64
		text string
	}{{&s.From, from}, {&s.To, to}, {&s.Of, of}} {
		if *f.dst, err = strconv.ParseInt(f.text, 10, 64); err != nil {
			return Segment{}, fmt.Errorf("segment %q: want from:to/of", text)
		}
	}
	return s, s.Validate()
}

// Split returns n segments that tile the whole run, one slot each.
func Split(n int) []Segment {
	out := make([]Segment, n)
	for i := range out {
		out[i] = Segment{From: int64(i), To: int64(i + 1), Of: int64(n)}
	}
	return out
}
