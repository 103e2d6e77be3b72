package metrics

import (
	"encoding/binary"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/barrage-load/barrage/internal/barrage"
)

// The binary formats. Each begins with a magic byte, which tells a histogram from a snapshot,
// and a version, which a reader refuses unless it knows it: version 1 fixes the bucket layout
// (1 µs unit, 2048 sub-buckets, 22 buckets) and the five error classes.
//
// A histogram's body, all integers unsigned LEB128 varints unless said otherwise:
//
//	count
//	min max sum clamped        (only when count > 0; µs)
//	counts                     (only when count > 0)
//
// counts walks the slots from the lowest: a zig-zag signed varint that is positive is the count
// of the next slot; a negative one skips that many empty slots. The walk ends when the counts add
// up to count, so it needs no length. A slot whose neighbours are in use costs one byte, a lone
// one two; a second of 10,000 samples spread over 1-50 ms takes about 4.3 KB.
//
// A snapshot, version 2:
//
//	start.sec (zig-zag) start.nsec duration (zig-zag, ns) labels
//	per label, in increasing order of kind, then of name's bytes:
//	    kind len(name) name requests errors[connect..assertion] bytesIn bytesOut histogram body
//
// Version 1 of a snapshot had no kind: a group's name began "group: " and a url plugin's hooks'
// "hook: ", so a request could be taken for a group. Readers still take it (runs stored before
// version 2 keep their seconds), reading those prefixes as kinds; writers write version 2.
//
// Encodings are canonical: readers refuse non-minimal varints, zero counts, adjacent skips,
// unsorted or repeated labels, and figures that contradict each other (a minimum outside the
// lowest slot in use, say). So every input is refused or decodes to values whose encoding is
// that very input, which is what the fuzz tests check.
const (
	histogramMagic        = 'H'
	snapshotMagic         = 'S'
	formatVersion         = 1 // of histograms
	snapshotVersion       = 2
	legacySnapshotVersion = 1
	encodedClasses        = int(NumErrorClasses) - 1           // NoError is not sent
	minLabelEncSize       = 1 + 1 + 1 + encodedClasses + 2 + 1 // kind, name length, requests, errors, bytes, count
)

// The prefixes by which version 1 of a snapshot told groups and hooks from requests.
const (
	legacyGroupPrefix = "group: "
	legacyHookPrefix  = "hook: "
)

// AppendBinary appends h's binary encoding to b (encoding.BinaryAppender), for callers that
// reuse a buffer. The error is always nil.
func (h *Histogram) AppendBinary(b []byte) ([]byte, error) {
	return h.appendBody(append(b, histogramMagic, formatVersion)), nil
}

// MarshalBinary encodes h compactly (see AppendBinary). Nothing may record into h meanwhile: the
// encoding must agree with itself to decode. The error is always nil.
func (h *Histogram) MarshalBinary() ([]byte, error) {
	return h.AppendBinary(make([]byte, 0, 64))
}

func (h *Histogram) appendBody(b []byte) []byte {
	n := h.count.Load()
	b = binary.AppendUvarint(b, uint64(n))
	if n == 0 {
		return b
	}
	b = binary.AppendUvarint(b, uint64(maxMicros+1-h.minInv.Load()))
	b = binary.AppendUvarint(b, uint64(h.max.Load()))
	b = binary.AppendUvarint(b, uint64(h.sum.Load()))
	b = binary.AppendUvarint(b, uint64(h.clamped.Load()))
	next := 0 // the slot the walk stands on
	for pi := range h.pages {
		p := h.pages[pi].Load()
		if p == nil {
			continue
		}
		for j := range p {
			c := p[j].Load()
			if c == 0 {
				continue
			}
			i := pi<<pageBits + j
			if i > next {
				b = binary.AppendVarint(b, -int64(i-next))
			}
			b = binary.AppendVarint(b, c)
			next = i + 1
		}
	}
	return b
}

// UnmarshalBinary replaces h's contents with the histogram encoded in data. It refuses anything
// but a canonical encoding with an error wrapping barrage.ErrInvalid, and never panics; on error
// h is left empty. Decoding allocates a 2 KB page per 256 slots in use, up to 184 KB however
// short data is, so a reader of untrusted input bounds how many histograms it decodes.
func (h *Histogram) UnmarshalBinary(data []byte) error {
	h.Reset()
	d := decoder{b: data}
	d.header(histogramMagic, "histogram", formatVersion, formatVersion)
	h.decodeBody(&d, replace)
	if d.err == nil && len(d.b) > 0 {
		d.fail("%d bytes after the histogram", len(d.b))
	}
	if d.err != nil {
		h.Reset()
	}
	return d.err
}

// decodeMode is what decoding does with a histogram's counts.
type decodeMode int

const (
	replace  decodeMode = iota // store them in an empty histogram
	add                        // add them to the histogram's own, merging as Merge does
	validate                   // only check them: no histogram, no allocation
)

// decodeBody reads a histogram's body into h as mode says; h is nil when validating.
func (h *Histogram) decodeBody(d *decoder, mode decodeMode) {
	n := d.int64("count")
	if n == 0 || d.err != nil {
		return
	}
	lo, hi, sum, clamped := d.int64("min"), d.int64("max"), d.int64("sum"), d.int64("clamped")
	switch {
	case d.err != nil:
		return
	case lo < 1 || lo > hi || hi > maxMicros:
		d.fail("min %d and max %d µs out of order or range", lo, hi)
		return
	case clamped > n || clamped > 0 && hi != maxMicros:
		d.fail("%d clamped samples with max %d µs", clamped, hi)
		return
	case !productAtMost(n, lo, sum) || productAtMost(n, hi, sum-1):
		d.fail("sum %d µs does not fit %d samples between %d and %d µs", sum, n, lo, hi)
		return
	}
	first, last, next, left, skipped := -1, -1, 0, n, false
	var lastCount int64
	for left > 0 && d.err == nil {
		var x int64
		if len(d.b) > 0 && d.b[0] < 0x80 { // most entries are one byte: skip the general path
			x = int64(d.b[0]>>1) ^ -int64(d.b[0]&1)
			d.b = d.b[1:]
		} else {
			x = d.varint("slot")
		}
		switch {
		case d.err != nil:
		case x < 0 && !skipped && -x <= int64(countsLen-next):
			next += int(-x)
			skipped = true
		case x > 0 && x <= left && next < countsLen:
			switch mode {
			case replace:
				h.counter(next).Store(x)
			case add:
				h.counter(next).Add(x)
			}
			if first < 0 {
				first = next
			}
			last, lastCount, left, skipped = next, x, left-x, false
			next++
		default:
			d.fail("slot entry %d at slot %d with %d samples left", x, next, left)
		}
	}
	switch {
	case d.err != nil:
	case lo < lowestValue(first) || lo > highestValue(first):
		d.fail("min %d µs outside the lowest slot in use", lo)
	case hi < lowestValue(last) || hi > highestValue(last):
		d.fail("max %d µs outside the highest slot in use", hi)
	case clamped > 0 && lastCount < clamped:
		d.fail("%d clamped samples but %d in the top slot", clamped, lastCount)
	case mode == replace:
		h.count.Store(n)
		h.sum.Store(sum)
		h.clamped.Store(clamped)
		h.max.Store(hi)
		h.minInv.Store(maxMicros + 1 - lo)
	case mode == add:
		h.count.Add(n)
		h.sum.Add(sum)
		h.clamped.Add(clamped)
		raise(&h.max, hi)
		raise(&h.minInv, maxMicros+1-lo)
	}
}

// productAtMost reports whether a*b <= c for non-negative a, b; c may be -1.
func productAtMost(a, b, c int64) bool {
	if c < 0 {
		return false
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return hi == 0 && lo <= uint64(c)
}

// AppendBinary appends s's binary encoding to b (encoding.BinaryAppender). Labels go in sorted
// order, so equal snapshots encode equally. The error is always nil.
func (s *Snapshot) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, snapshotMagic, snapshotVersion)
	b = binary.AppendVarint(b, s.Start.Unix())
	b = binary.AppendUvarint(b, uint64(s.Start.Nanosecond()))
	b = binary.AppendVarint(b, int64(s.Duration))
	keys := slices.SortedFunc(maps.Keys(s.Labels), Key.Compare)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	var empty Histogram
	for _, k := range keys {
		st := s.Labels[k]
		if st == nil {
			st = &Stats{}
		}
		b = append(b, byte(k.Kind))
		b = binary.AppendUvarint(b, uint64(len(k.Name)))
		b = append(b, k.Name...)
		b = binary.AppendUvarint(b, uint64(st.Requests))
		for _, e := range st.Errors[NoError+1:] {
			b = binary.AppendUvarint(b, uint64(e))
		}
		b = binary.AppendUvarint(b, uint64(st.BytesIn))
		b = binary.AppendUvarint(b, uint64(st.BytesOut))
		if st.Latency != nil {
			b = st.Latency.appendBody(b)
		} else {
			b = empty.appendBody(b)
		}
	}
	return b, nil
}

// MarshalBinary encodes s compactly (see AppendBinary). Counts must not be negative: they are
// sent unsigned, and a negative one fails to decode. The error is always nil.
func (s *Snapshot) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(make([]byte, 0, 256))
}

// UnmarshalBinary replaces s with the snapshot encoded in data. Like Histogram.UnmarshalBinary
// it refuses anything but a canonical encoding with an error wrapping barrage.ErrInvalid and never
// panics; on error s is left empty. Each label may cost up to 184 KB of histogram pages, so a
// server decoding agents' snapshots bounds the body size and checks the labels against the
// script's.
func (s *Snapshot) UnmarshalBinary(data []byte) error {
	*s = Snapshot{}
	dec, err := decodeSnapshot(data, func(Key) *Stats { return NewStats() }, replace)
	if err == nil {
		*s = *dec
	}
	return err
}

// MergeBinary adds the snapshot encoded in data to s, as Merge would add the decoded snapshot,
// but without building it: its counts go straight into s's histograms, so merging the seconds of
// many agents allocates only s's own pages. On error, which wraps barrage.ErrInvalid, s may hold
// part of data's labels.
func (s *Snapshot) MergeBinary(data []byte) error {
	if s.Labels == nil {
		s.Labels = map[Key]*Stats{}
	}
	dec, err := decodeSnapshot(data, func(k Key) *Stats {
		st := s.Labels[k]
		if st == nil {
			st = NewStats()
			s.Labels[k] = st
		}
		return st
	}, add)
	if err != nil {
		return err
	}
	labels := s.Labels
	dec.Labels = nil
	s.Merge(dec) // the interval; the labels are merged already
	s.Labels = labels
	return nil
}

// ValidateSnapshot checks that data is a canonical snapshot encoding, as UnmarshalBinary does,
// without decoding it into anything: a server that takes agents' snapshots checks them this way
// before it stores them.
func ValidateSnapshot(data []byte) error {
	var scratch Stats
	_, err := decodeSnapshot(data, func(Key) *Stats { scratch = Stats{}; return &scratch }, validate)
	return err
}

// DecodeCounts decodes the snapshot encoded in data without its latency histograms: every Stats
// it returns has a nil Latency. It checks the encoding as UnmarshalBinary does, at a fraction of
// the cost, for whoever needs only the counts (a shard's share of a run's requests).
func DecodeCounts(data []byte) (*Snapshot, error) {
	labels := map[Key]*Stats{}
	s, err := decodeSnapshot(data, func(k Key) *Stats {
		st := &Stats{}
		labels[k] = st
		return st
	}, validate)
	if err != nil {
		return nil, err
	}
	s.Labels = labels
	return s, nil
}

// decodeSnapshot reads a snapshot, putting each label's counts in the Stats that stats returns
// for its key, as mode says (stats' Latency is ignored when validating). The snapshot it
// returns holds the interval, and the labels when mode is replace.
func decodeSnapshot(data []byte, stats func(Key) *Stats, mode decodeMode) (*Snapshot, error) {
	d := decoder{b: data}
	version := d.header(snapshotMagic, "snapshot", legacySnapshotVersion, snapshotVersion)
	sec := d.varint("start")
	nsec := d.int64("start nanoseconds")
	dur := d.varint("duration")
	nl := d.int64("label count")
	if d.err == nil && nsec >= 1e9 {
		d.fail("start nanoseconds %d", nsec)
	}
	minSize := minLabelEncSize
	if version == legacySnapshotVersion {
		minSize-- // no kind
	}
	if d.err == nil && nl > int64(len(d.b)/minSize) {
		d.fail("%d labels in %d bytes", nl, len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	var labels map[Key]*Stats
	if mode == replace {
		labels = make(map[Key]*Stats, nl)
	}
	var prev Key
	prevName := ""
	for i := range nl {
		var k Key
		if version == legacySnapshotVersion {
			name := d.bytes("label name")
			if d.err == nil && i > 0 && name <= prevName {
				d.fail("label %q after %q", name, prevName)
			}
			k, prevName = legacyKey(name), name
		} else {
			k.Kind = d.kind()
			k.Name = d.bytes("label name")
			if d.err == nil && i > 0 && k.Compare(prev) <= 0 {
				d.fail("label %s after %s", k, prev)
			}
		}
		if d.err != nil {
			return nil, d.err
		}
		st := stats(k)
		st.Requests += d.int64("requests")
		for c := NoError + 1; c < NumErrorClasses; c++ {
			st.Errors[c] += d.int64("errors")
		}
		st.BytesIn += d.int64("bytes in")
		st.BytesOut += d.int64("bytes out")
		if mode == validate {
			(*Histogram)(nil).decodeBody(&d, validate)
		} else {
			st.Latency.decodeBody(&d, mode)
		}
		if d.err != nil {
			return nil, d.err
		}
		if labels != nil {
			labels[k] = st
		}
		prev = k
	}
	if len(d.b) > 0 {
		d.fail("%d bytes after the snapshot", len(d.b))
		return nil, d.err
	}
	return &Snapshot{Start: time.Unix(sec, nsec).UTC(), Duration: time.Duration(dur), Labels: labels}, nil
}

// legacyKey is the key of a label named name in version 1 of a snapshot.
func legacyKey(name string) Key {
	if g, ok := strings.CutPrefix(name, legacyGroupPrefix); ok {
		return GroupKey(g)
	}
	if h, ok := strings.CutPrefix(name, legacyHookPrefix); ok {
		return HookKey(h)
	}
	return RequestKey(name)
}

// decoder reads varints off b. The first failure sticks, so a decoding routine can read on and
// check d.err once; later reads return zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = barrage.Errorf(barrage.ErrInvalid, "malformed metrics: "+format, args...)
	}
}

// header reads the magic byte and a version from oldest to newest, and returns the version.
func (d *decoder) header(magic byte, what string, oldest, newest byte) byte {
	switch {
	case len(d.b) < 2 || d.b[0] != magic:
		d.fail("not a %s", what)
	case d.b[1] < oldest || d.b[1] > newest:
		d.fail("%s format version %d, want %d", what, d.b[1], newest)
	default:
		v := d.b[1]
		d.b = d.b[2:]
		return v
	}
	return 0
}

// kind reads a label's kind, one byte.
func (d *decoder) kind() Kind {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 || d.b[0] >= byte(NumKinds) {
		d.fail("bad label kind")
		return 0
	}
	k := Kind(d.b[0])
	d.b = d.b[1:]
	return k
}

// uvarint reads a minimally encoded unsigned varint.
func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b)
	if n <= 0 || n > 1 && d.b[n-1] == 0 {
		d.fail("bad varint for %s", what)
		return 0
	}
	d.b = d.b[n:]
	return x
}

// int64 reads a non-negative int64 sent unsigned.
func (d *decoder) int64(what string) int64 {
	x := d.uvarint(what)
	if x > math.MaxInt64 {
		d.fail("%s %d out of range", what, x)
		return 0
	}
	return int64(x)
}

// varint reads a zig-zag signed varint.
func (d *decoder) varint(what string) int64 {
	x := d.uvarint(what)
	return int64(x>>1) ^ -int64(x&1)
}

// bytes reads a length-prefixed string.
func (d *decoder) bytes(what string) string {
	n := d.uvarint(what)
	if d.err == nil && n > uint64(len(d.b)) {
		d.fail("%s of %d bytes in %d", what, n, len(d.b))
	}
	if d.err != nil {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
