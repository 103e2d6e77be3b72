package fleet

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
)

// PingWait is how long a ping waits for its agent's answer.
const PingWait = 5 * time.Second

// Ping sends an application-level ping through agent id, which p may see, and returns the
// round trip: from the server to the agent (woken at once when it waits for work, at its next
// report when it runs a shard) and back.
func (s *Service) Ping(ctx context.Context, p barrage.Principal, id uuid.UUID) (barrage.Agent, time.Duration, error) {
	a, err := s.store.UsableAgent(ctx, p.Projects(barrage.ProjectViewer), id)
	if err != nil {
		return a, 0, err
	}
	if st := a.State(s.now()); st == barrage.AgentOffline || st == barrage.AgentDisabled {
		return a, 0, barrage.Errorf(barrage.ErrConflict, "agent %q is %s", a.Name, st)
	}
	pingID := uuid.Must(uuid.NewV7())
	var rtt time.Duration
	err = s.await(ctx, pingID, PingWait, func() error { return s.store.CreatePing(ctx, pingID, a.ID) }, func() (bool, error) {
		var ok bool
		var err error
		rtt, ok, err = s.store.PingRoundTrip(ctx, pingID)
		return ok, err
	})
	if errors.Is(err, barrage.ErrNoAnswer) {
		return a, 0, barrage.Errorf(barrage.ErrNoAnswer, "agent %q did not answer within %s", a.Name, PingWait)
	}
	return a, rtt, err
}

// AnswerPing records agent a's answer to its ping id.
func (s *Service) AnswerPing(ctx context.Context, a barrage.Agent, id uuid.UUID) error {
	return s.store.AnswerPing(ctx, a.ID, id)
}
