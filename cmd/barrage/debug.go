package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"

	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
	"github.com/barrage-load/barrage/internal/summary"
)

func runDebug(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "debug", "[flags] SCRIPT")
	preview := fs.Int("preview", 2048, "bytes of each body to show")
	insecure := fs.Bool("insecure", false, "skip TLS certificate verification")
	pf := addPluginFlags(fs, e)
	pf.addGrantFlag(fs)
	set, s, err := pf.loadScript(ctx, fs, args, func(*script.Script) (int, error) { return 1, nil })
	if err != nil {
		return err
	}
	defer set.Close()
	var plugins map[string]engine.Plugin
	if set != nil {
		plugins = set.Plugins
	}
	secrets, err := localSecrets(e, s)
	if err != nil {
		return err
	}
	failed := 0
	err = engine.Debug(ctx, s, engine.Options{Env: envLookup(e), Secrets: secrets, Insecure: *insecure, Plugins: plugins, Trace: func(ev run.TraceEvent) {
		if len(ev.Failures) > 0 || ev.Err != nil {
			failed++
		}
		printTrace(e.stdout, ev, *preview)
	}})
	if err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d request(s) failed", failed)
	}
	fmt.Fprintln(e.stdout, "every request passed its checks")
	return nil
}

func printTrace(w io.Writer, ev run.TraceEvent, preview int) {
	fmt.Fprintf(w, "=== %s\n> %s %s\n", ev.Request, ev.Method, ev.URL)
	for _, h := range ev.RequestHeader {
		fmt.Fprintf(w, "> %s: %s\n", h[0], h[1])
	}
	if len(ev.RequestBody) > 0 {
		fmt.Fprintf(w, ">\n%s\n", run.Preview(ev.RequestBody, preview))
	}
	for _, r := range ev.Redirects {
		fmt.Fprintf(w, "< %d, followed\n> %s %s\n", r.Status, r.Method, r.URL)
	}
	switch {
	case ev.Method == "WS SEND" && ev.Err == nil:
	case ev.Method == "WS RECEIVE" && ev.Err == nil:
		fmt.Fprintf(w, "< message after %s\n%s\n", summary.Duration(ev.Duration), run.Preview(ev.ResponseBody, preview))
	case ev.Err != nil:
		if ev.Status != 0 { // a body that did not decode: the headers say how it came
			fmt.Fprintf(w, "< %d (%s, %d bytes)\n", ev.Status, summary.Duration(ev.Duration), ev.BytesIn)
			printHeaders(w, ev.ResponseHeader)
		}
		fmt.Fprintf(w, "! %v\n", ev.Err)
	default:
		fmt.Fprintf(w, "< %d (%s, %d bytes)\n", ev.Status, summary.Duration(ev.Duration), ev.BytesIn)
		printHeaders(w, ev.ResponseHeader)
		switch {
		case ev.Encoding != "" && ev.DecodedPart:
			fmt.Fprintf(w, "< (body came %s-compressed: decoding stopped past the body cap, at %d bytes; shown decoded)\n", ev.Encoding, ev.Decoded)
		case ev.Encoding != "":
			fmt.Fprintf(w, "< (body came %s-compressed: %d bytes decoded; shown decoded)\n", ev.Encoding, ev.Decoded)
		}
		if len(ev.ResponseBody) > 0 {
			fmt.Fprintf(w, "<\n%s\n", run.Preview(ev.ResponseBody, preview))
		}
	}
	if len(ev.Vars) > 0 {
		keys := make([]string, 0, len(ev.Vars))
		for k := range ev.Vars {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  var %s = %q\n", k, ev.Vars[k])
		}
	}
	if len(ev.Failures) == 0 && ev.Err == nil {
		fmt.Fprintln(w, "  checks passed")
	}
	for _, f := range ev.Failures {
		fmt.Fprintf(w, "  FAILED: %s\n", f)
	}
	fmt.Fprintln(w)
}

// printHeaders prints a response's headers by name.
func printHeaders(w io.Writer, h http.Header) {
	for _, k := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[k] {
			fmt.Fprintf(w, "< %s: %s\n", k, v)
		}
	}
}
