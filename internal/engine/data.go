package engine

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/barrage-load/barrage/internal/script"
)

// dataSource hands out the rows of one data file to the VUs, in the file's order.
type dataSource struct {
	df     *script.DataFile
	cursor atomic.Int64
}

// next puts the next row's columns into row. Sequential rows are each handed out once across
// all VUs (an atomic counter, no lock); when they run out it returns errExhausted.
func (d *dataSource) next(rng *rand.Rand, row map[string]string) error {
	n := len(d.df.Rows)
	var i int
	switch d.df.Order {
	case script.Sequential:
		k := d.cursor.Add(1) - 1
		if k >= int64(n) {
			return fmt.Errorf("%w: %s has no row left", errExhausted, d.df.File)
		}
		i = int(k)
	case script.Random:
		i = rng.IntN(n)
	default: // circular
		i = int((d.cursor.Add(1) - 1) % int64(n))
	}
	for c, name := range d.df.Columns {
		row[name] = d.df.Rows[i][c]
	}
	return nil
}
