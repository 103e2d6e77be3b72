package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/barrage-load/barrage/internal/demoshop"
)

func runDemoShop(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "demo-shop", "[--addr 127.0.0.1:8081]")
	addr := fs.String("addr", "127.0.0.1:8081", "address to serve the demo shop on")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: demoshop.New().Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(e.stderr, "demo shop on http://%s (try: barrage run examples/scripts/shop.yaml); Ctrl-C stops it\n", ln.Addr())
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
