package main

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/barrage-load/barrage/internal/har"
	"github.com/barrage-load/barrage/internal/record"
)

func runRecord(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "record", "-o test.yaml [--listen 127.0.0.1:8888] [--har visit.har] [--assets] [--idle 2s] [--users users.csv]")
	listen := fs.String("listen", "127.0.0.1:8888", "the proxy's address; set it as the browser's or client's HTTP and HTTPS proxy")
	harPath := fs.String("har", "", "also write the recording as a HAR file (barrage import har makes the same script from it)")
	caDir := fs.String("ca-dir", record.DefaultDir(e.getenv), "the folder that keeps the recording CA, made the first time ($BARRAGE_CA_DIR)")
	targetCA := fs.String("target-ca", "", "a PEM bundle of CA certificates to trust for the targets, besides the system's")
	insecure := fs.Bool("insecure", false, "skip the check of the targets' certificates")
	cf := addConvertFlags(fs)
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	if *cf.out == "" {
		fs.Usage()
		return usageError(errors.New("-o: name the script to write when the recording ends"))
	}
	opts, err := cf.options(e)
	if err != nil {
		return err
	}
	if *harPath != "" {
		if st, err := os.Stat(filepath.Dir(*harPath)); err != nil || !st.IsDir() {
			return usageError(fmt.Errorf("--har %s: no folder %s to write it in", *harPath, filepath.Dir(*harPath)))
		}
	}
	var roots *x509.CertPool
	if *targetCA != "" {
		pem, err := os.ReadFile(*targetCA)
		if err != nil {
			return usageError(fmt.Errorf("--target-ca: %w", err))
		}
		if roots, err = x509.SystemCertPool(); err != nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(pem) {
			return usageError(fmt.Errorf("--target-ca %s holds no PEM certificate", *targetCA))
		}
	}
	ca, created, err := record.LoadCA(*caDir)
	if err != nil {
		return err
	}
	// The proxy relays whatever its clients ask, anywhere, and decrypts their HTTPS: it is for
	// this machine's own browser alone, never an open proxy on a network.
	if host, _, err := net.SplitHostPort(*listen); err != nil || !isLoopback(host) {
		return usageError(fmt.Errorf("--listen %s: the recording proxy listens on a loopback address only (127.0.0.1, ::1, localhost): it relays anything its clients ask and decrypts their HTTPS", *listen))
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	addr := ln.Addr().String()

	live := newLiveCounter(e.stderr)
	rec := record.New(record.Options{CA: ca, Idle: *cf.idle, RootCAs: roots, Insecure: *insecure, Self: addr, Version: version, OnExchange: live.event})
	srv := &http.Server{Handler: rec, ReadHeaderTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	made := ""
	if created {
		made = " (made now, kept for later recordings)"
	}
	fmt.Fprintf(e.stderr, `barrage record: proxy on %s, recording http and https
HTTPS is opened with certificates signed by the recording CA %s%s. Trust it once:
  curl:     curl --proxy http://%s --cacert %s https://...
  Firefox:  Settings, Privacy & Security, Certificates, View Certificates, Authorities, Import
  Linux (Chrome, the system): sudo cp %s /usr/local/share/ca-certificates/barrage-recording.crt && sudo update-ca-certificates
  macOS:    sudo security add-trusted-cert -d -r trustRoot -k /Library/Keychains/System.keychain %s
  or fetch it through the proxy: http://%s/barrage-ca.pem
Set the browser's HTTP and HTTPS proxy to %s and browse. Press Enter when you move on to a new page;
Ctrl-C ends the recording and writes %s.
`, addr, ca.CertPath, made, addr, ca.CertPath, ca.CertPath, ca.CertPath, addr, addr, *cf.out)

	go readMarks(e.stdin, rec, live)

	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("the proxy stopped: %w", err)
	}
	live.finish()
	// What is in flight when the person stops is finished, within a few seconds, then
	// whatever is left open is cut.
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(stop)
	rec.Wait(stop)
	rec.Close()

	l := rec.Log()
	if len(l.Entries) == 0 {
		return errors.New("nothing was recorded: no script written (set the browser's proxy to " + addr + ")")
	}
	if *harPath != "" {
		if err := writeHAR(*harPath, l); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "wrote %s: %d exchanges\n", *harPath, len(l.Entries))
	}
	if err := cf.convert(e, l, opts); err != nil {
		if *harPath == "" {
			// The visit is not lost with the script: it is kept as a HAR to convert again.
			keep := strings.TrimSuffix(*cf.out, filepath.Ext(*cf.out)) + ".har"
			if werr := writeHAR(keep, l); werr == nil {
				return fmt.Errorf("%w\nthe recording is kept in %s (barrage import har %s)", err, keep, keep)
			}
		}
		return err
	}
	return nil
}

func writeHAR(path string, l *har.Log) error {
	data, err := har.Encode(l)
	if err != nil {
		return err
	}
	// A recording holds what was typed and the session's cookies: readable by its owner alone.
	if err := writePrivate(path, data); err != nil {
		return fmt.Errorf("write the HAR: %w", err)
	}
	return nil
}

// readMarks starts a new page at each line read: the person pressed Enter, or a program
// driving the recording wrote a line. At the end of the input the recording goes on, until
// Ctrl-C.
func readMarks(in io.Reader, rec *record.Recorder, live *liveCounter) {
	if in == nil {
		return
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		live.line(fmt.Sprintf("page %d starts with the next request", rec.MarkPage()))
	}
}

// liveCounter shows the recording as it goes: on a terminal one line, rewritten, with the count
// of requests recorded; elsewhere a line per exchange.
type liveCounter struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	pending  bool // a counter line is on screen, without its line break
	hinted   bool
}

func newLiveCounter(w io.Writer) *liveCounter {
	f, ok := w.(*os.File)
	return &liveCounter{w: w, terminal: ok && term.IsTerminal(int(f.Fd()))}
}

func (l *liveCounter) event(ev record.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ev.Err != nil {
		if ev.Method == "" && l.hinted {
			return // a refused handshake is said once: the browser retries it for every host
		}
		l.hinted = l.hinted || ev.Method == ""
		l.breakLine()
		fmt.Fprintf(l.w, "not recorded: %s: %v\n", strings.TrimSpace(ev.Method+" "+ev.URL), ev.Err)
		return
	}
	if l.terminal {
		fmt.Fprintf(l.w, "\r\033[Krecorded %d requests, page %d: %s %s %d", ev.Count, ev.Page, ev.Method, shortURL(ev.URL), ev.Status)
		l.pending = true
		return
	}
	fmt.Fprintf(l.w, "recorded %d, page %d: %s %s %d\n", ev.Count, ev.Page, ev.Method, ev.URL, ev.Status)
}

func (l *liveCounter) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.breakLine()
	fmt.Fprintln(l.w, s)
}

func (l *liveCounter) finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.breakLine()
}

func (l *liveCounter) breakLine() {
	if l.pending {
		fmt.Fprintln(l.w)
		l.pending = false
	}
}

func shortURL(u string) string {
	if len(u) > 80 {
		return u[:79] + "…"
	}
	return u
}

// isLoopback says whether host names this machine's loopback.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}
