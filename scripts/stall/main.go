// Command stall is a benchmark's target that stalls: for the first -stall of every -period it
// holds each request that arrives until the stall is over, and answers at once otherwise. It
// measures the time it held each request, the truth a load tool's latencies are held against:
// GET /truth answers {"n": ..., "p50_ms": ..., "p99_ms": ...} of what it measured since it
// started or since GET /reset. It listens on 127.0.0.1 only.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "the address to listen on (127.0.0.1 only); its port is printed")
	period := flag.Duration("period", 2*time.Second, "how often the target stalls")
	stall := flag.Duration("stall", 100*time.Millisecond, "how long each stall lasts")
	flag.Parse()
	host, _, err := net.SplitHostPort(*addr)
	if err != nil || host != "127.0.0.1" {
		log.Fatalf("stall: -addr %s: listen on 127.0.0.1", *addr)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	os.Stdout.Sync()

	start := time.Now()
	var mu sync.Mutex
	var held []time.Duration
	mux := http.NewServeMux()
	mux.HandleFunc("GET /truth", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		s := slices.Clone(held)
		mu.Unlock()
		slices.Sort(s)
		q := func(p float64) float64 {
			if len(s) == 0 {
				return 0
			}
			return float64(s[min(int(p*float64(len(s))), len(s)-1)]) / float64(time.Millisecond)
		}
		json.NewEncoder(w).Encode(map[string]any{"n": len(s), "p50_ms": q(0.5), "p99_ms": q(0.99)})
	})
	mux.HandleFunc("GET /reset", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		held = held[:0]
		mu.Unlock()
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		began := time.Now()
		if phase := began.Sub(start) % *period; phase < *stall {
			time.Sleep(*stall - phase)
		}
		d := time.Since(began)
		mu.Lock()
		held = append(held, d)
		mu.Unlock()
		fmt.Fprint(w, "ok")
	})
	log.Fatal(http.Serve(ln, mux))
}
