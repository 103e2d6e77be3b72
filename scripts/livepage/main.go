// Command livepage measures the portal's live run page in a headless Chromium, as
// scripts/bench-portal.sh runs it: it signs in, opens a running run's page and, while the run
// goes on, reads how long the page took to draw each second it was sent (from the second's
// arrival to the page drawn: the page's own "barrage:live-update" measures), the browser's long
// tasks (50 ms or more), and the page's JavaScript heap after a garbage collection, at the start
// and every minute. It prints lines a script can read:
//
//	live page labels = 100
//	live page updates = 590
//	live page update p50 ms = 3.1
//	live page update p99 ms = 9.8
//	live page update max ms = 14.2
//	live page longest task ms = 0
//	live page heap start KiB = 2310
//	live page heap end KiB = 2350
//	live page heap growth KiB per minute = 4.1
//	live page dom nodes start = 1850
//	live page dom nodes end = 1850
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// observe keeps, for the bench to read, every live update's duration and every long task's.
const observe = `window.__bench = { updates: [], longtasks: [] };
new PerformanceObserver((l) => { for (const e of l.getEntries()) if (e.name === "barrage:live-update") __bench.updates.push(e.duration); }).observe({ type: "measure" });
new PerformanceObserver((l) => { for (const e of l.getEntries()) __bench.longtasks.push(e.duration); }).observe({ type: "longtask" });`

func main() {
	server := flag.String("server", "", "the portal's URL")
	email := flag.String("email", "", "who signs in")
	password := flag.String("password", "", "their password")
	run := flag.String("run", "", "the running run's id")
	seconds := flag.Int("seconds", 600, "how long to watch the page")
	labels := flag.Int("labels", 100, "the request labels the run has, which the page must show")
	flag.Parse()
	if err := measure(*server, *email, *password, *run, time.Duration(*seconds)*time.Second, *labels); err != nil {
		fmt.Fprintln(os.Stderr, "livepage:", err)
		os.Exit(1)
	}
}

func chromium() (string, error) {
	if p := os.Getenv("BARRAGE_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium on PATH (apt-get install chromium)")
}

func measure(server, email, password, run string, watch time.Duration, labels int) error {
	bin, err := chromium()
	if err != nil {
		return err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.WindowSize(1280, 900), chromedp.DisableGPU)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) error {
		c, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := chromedp.Do(c, actions...); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	// The first action starts Chromium: a timeout on it would end the browser with it.
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: observe})
		return err
	})); err != nil {
		return fmt.Errorf("start chromium: %w", err)
	}
	if err := step("sign in",
		chromedp.Navigate(server+"/signin"),
		chromedp.SendKeys(`input[type=email]`, email),
		chromedp.SendKeys(`input[type=password]`, password),
		chromedp.Click(`main button[type=submit]`),
		chromedp.WaitVisible(`nav`),
	); err != nil {
		return err
	}
	rows := `document.querySelectorAll('section[aria-label="Live"] tbody th[scope=row]').length`
	if err := step("open the run's live page",
		chromedp.Navigate(server+"/runs/"+run),
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`%s >= %d`, rows, labels), chromedp.WithPollingTimeout(time.Minute)),
	); err != nil {
		return err
	}
	heap := func() (float64, int, error) {
		c, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		var used float64
		err := chromedp.Do(c, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			if _, err := cdp.Call(ctx, t, heapprofiler.CollectGarbage, cdp.Empty{}); err != nil {
				return err
			}
			r, err := cdp.Call(ctx, t, runtime.GetHeapUsage, cdp.Empty{})
			if err != nil {
				return err
			}
			used = r.UsedSize
			return nil
		}))
		if err != nil {
			return 0, 0, err
		}
		nodes, err := chromedp.Run(c, chromedp.Evaluate[int](`document.getElementsByTagName("*").length`))
		return used / 1024, nodes, err
	}
	startHeap, startNodes, err := heap()
	if err != nil {
		return err
	}
	start := time.Now()
	endHeap, endNodes := startHeap, startNodes
	var at, heaps []float64 // the heap each minute after the first, and when, in minutes
	for time.Since(start) < watch {
		time.Sleep(min(time.Minute, watch-time.Since(start)))
		if endHeap, endNodes, err = heap(); err != nil {
			return err
		}
		if m := time.Since(start).Minutes(); m > 1.5 {
			at, heaps = append(at, m), append(heaps, endHeap)
		}
		fmt.Printf("heap at %s: %.0f KiB, %d DOM nodes\n", time.Since(start).Round(time.Second), endHeap, endNodes)
		live, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.querySelector(".live-status")`))
		if err != nil {
			return err
		}
		if !live {
			return fmt.Errorf("the run ended %s into the watch, before %s: give it a longer load", time.Since(start).Round(time.Second), watch)
		}
	}
	minutes := time.Since(start).Minutes()
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[int](rows))
	if err != nil {
		return err
	}
	var got struct{ Updates, Longtasks []float64 }
	if got, err = chromedp.Run(ctx, chromedp.Evaluate[struct{ Updates, Longtasks []float64 }](`window.__bench`)); err != nil {
		return err
	}
	if len(got.Updates) == 0 {
		return errors.New("the page measured no update: the live page's barrage:live-update measure is gone")
	}
	slices.Sort(got.Updates)
	q := func(p float64) float64 {
		return got.Updates[min(len(got.Updates)-1, int(math.Ceil(p*float64(len(got.Updates))))-1)]
	}
	longest := 0.0
	for _, d := range got.Longtasks {
		longest = max(longest, d)
	}
	fmt.Printf("live page labels = %d\n", shown)
	fmt.Printf("live page updates = %d\n", len(got.Updates))
	fmt.Printf("live page update p50 ms = %.2f\n", q(0.5))
	fmt.Printf("live page update p99 ms = %.2f\n", q(0.99))
	fmt.Printf("live page update max ms = %.2f\n", got.Updates[len(got.Updates)-1])
	fmt.Printf("live page longest task ms = %.0f\n", longest)
	fmt.Printf("live page heap start KiB = %.0f\n", startHeap)
	fmt.Printf("live page heap end KiB = %.0f\n", endHeap)
	// The growth is the slope of the heap over the minutes after the first (which holds the
	// page's warming up: its code compiled, its charts filling), fitted by least squares, as a
	// garbage collector's heap moves up and down about its trend; over the whole watch when
	// it is too short for that.
	growth := (endHeap - startHeap) / minutes
	if len(heaps) >= 3 {
		growth = slope(at, heaps)
	}
	fmt.Printf("live page heap growth KiB per minute = %.1f\n", growth)
	fmt.Printf("live page dom nodes start = %d\n", startNodes)
	fmt.Printf("live page dom nodes end = %d\n", endNodes)
	return nil
}

// slope is the least-squares slope of y over x.
func slope(x, y []float64) float64 {
	var mx, my float64
	for i := range x {
		mx, my = mx+x[i], my+y[i]
	}
	mx, my = mx/float64(len(x)), my/float64(len(y))
	var num, den float64
	for i := range x {
		num += (x[i] - mx) * (y[i] - my)
		den += (x[i] - mx) * (x[i] - mx)
	}
	return num / den
}
