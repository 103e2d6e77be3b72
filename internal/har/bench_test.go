package har_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/barrage-load/barrage/internal/har"
)

// BenchmarkConvertLargeHAR converts 100 pages of 100 kB, each answering a form of 30 fields:
// every field is a candidate looked for in every earlier response. (Before responses kept an
// index of their words, 300 such pages took minutes.)
func BenchmarkConvertLargeHAR(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	tok := func() string { return fmt.Sprintf("%x", r.Uint64()) }
	var entries []har.Entry
	for i := range 100 {
		var body strings.Builder
		for body.Len() < 100_000 {
			fmt.Fprintf(&body, `<div id="x%d" data-v="%s">item %s</div>`+"\n", r.IntN(1000), tok(), tok())
		}
		e := entry(time.Duration(i)*300*time.Millisecond, "POST", fmt.Sprintf("http://s.test/p/%d?a=%s", i, tok()), 200, "text/html", body.String())
		form := make([]string, 30)
		for j := range form {
			form[j] = fmt.Sprintf("f%d=%s", j, tok())
		}
		e.Request.PostData = &har.PostData{MimeType: "application/x-www-form-urlencoded", Text: strings.Join(form, "&")}
		entries = append(entries, e)
	}
	l := &har.Log{Entries: entries}
	b.ResetTimer()
	for b.Loop() {
		if _, err := har.Convert(l, har.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
