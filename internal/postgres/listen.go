package postgres

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Listener fans the notifications of one PostgreSQL channel out to the goroutines waiting on a
// key (the payload), over one connection per replica whatever the number of waiters. A
// notification is sent when the transaction that made it commits, so a woken waiter reads what
// it was woken for. Waiters also wake when the connection was lost and found again: they may
// have missed something.
type Listener struct {
	store   *Store
	channel string
	log     *slog.Logger

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// NewListener returns a listener of channel; Run makes it listen.
func (s *Store) NewListener(channel string, log *slog.Logger) *Listener {
	return &Listener{store: s, channel: channel, log: log, subs: map[string]map[chan struct{}]struct{}{}}
}

// Subscribe returns a channel that receives (without blocking the listener, so a burst may
// arrive as one) when key is notified, and the function that ends the subscription.
func (l *Listener) Subscribe(key string) (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	l.mu.Lock()
	if l.subs[key] == nil {
		l.subs[key] = map[chan struct{}]struct{}{}
	}
	l.subs[key][c] = struct{}{}
	l.mu.Unlock()
	return c, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.subs[key], c)
		if len(l.subs[key]) == 0 {
			delete(l.subs, key)
		}
	}
}

func (l *Listener) wake(key string, all bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, set := range l.subs {
		if !all && k != key {
			continue
		}
		for c := range set {
			select {
			case c <- struct{}{}:
			default:
			}
		}
	}
}

// Run listens until ctx ends, connecting again (with a growing pause) when the connection is
// lost.
func (l *Listener) Run(ctx context.Context) {
	pause := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := l.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		l.log.Warn("listening for notifications failed; retrying", slog.String("channel", l.channel),
			slog.String("error", err.Error()), slog.Duration("in", pause))
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		pause = min(pause*2, 5*time.Second)
	}
}

func (l *Listener) listen(ctx context.Context) error {
	pc, err := l.store.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection stays in LISTEN state: take it from the pool, and close it at the end.
	conn := pc.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.channel}.Sanitize()); err != nil {
		return err
	}
	l.wake("", true) // anything sent while we were not listening is lost: look again
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) || ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		l.wake(n.Payload, false)
	}
}
