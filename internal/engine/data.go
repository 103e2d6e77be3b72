package engine

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
)

// dataSource hands out the rows of one data file to the VUs, in the file's order.
type dataSource struct {
	df     *script.DataFile
	seg    run.Segment
	cursor atomic.Int64
}

// next puts the next row's columns into row. Sequential rows are each handed out once across
// all VUs (an atomic counter, no lock) and, through the segment, across all shards of the run;
// when they run out it returns errExhausted.
func (d *dataSource) next(rng *rand.Rand, row map[string]string) error {
	n := int64(len(d.df.Rows))
	var i int64
	switch d.df.Order {
	case script.Sequential:
		i = d.seg.Nth(d.cursor.Add(1) - 1)
		if i >= n {
			return fmt.Errorf("%w: %s has no row left", errExhausted, d.df.File)
		}
	case script.Random:
		i = rng.Int64N(n)
	default: // circular
		i = d.seg.Nth(d.cursor.Add(1)-1) % n
	}
	for c, name := range d.df.Columns {
		row[name] = d.df.Rows[i][c]
	}
	return nil
}
