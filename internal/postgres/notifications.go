package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/postgres/dbsqlc"
)

// CreateChannel stores a notification channel in its project, unless the project has max
// channels already (a *barrage.LimitError then).
func (s *Store) CreateChannel(ctx context.Context, c barrage.Channel, max int) (barrage.Channel, error) {
	var out barrage.Channel
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := s.q.ProjectLock(ctx, tx, c.ProjectID); err != nil {
			return translate(err, "project")
		}
		n, err := s.q.NotificationChannelCount(ctx, tx, c.ProjectID)
		if err != nil {
			return err
		}
		if n >= int64(max) {
			return barrage.Errorf(barrage.ErrLimitExceeded, "the project has %d notification channels, the most one may: delete one first", n)
		}
		row, err := s.q.NotificationChannelInsert(ctx, tx, dbsqlc.NotificationChannelInsertParams{ID: c.ID, ProjectID: c.ProjectID,
			CreatedBy: c.CreatedBy, Name: c.Name, Kind: string(c.Kind), TargetSealed: c.TargetSealed, TargetHint: c.TargetHint,
			SecretSealed: c.SecretSealed, Events: eventStrings(c.Events)})
		if err != nil {
			return translate(err, "a channel of this name in the project")
		}
		out = channelFromRow(row)
		return nil
	})
	return out, err
}

// Channel reads a channel of the projects given.
func (s *Store) Channel(ctx context.Context, projects []uuid.UUID, id uuid.UUID) (barrage.Channel, error) {
	row, err := s.q.NotificationChannelGet(ctx, s.pool, dbsqlc.NotificationChannelGetParams{ID: id, Projects: projects})
	return channelFromRow(row), translate(err, "notification channel")
}

// ChannelByID reads a channel by id alone, for its deliveries.
func (s *Store) ChannelByID(ctx context.Context, id uuid.UUID) (barrage.Channel, error) {
	row, err := s.q.NotificationChannelGetByID(ctx, s.pool, id)
	return channelFromRow(row), translate(err, "notification channel")
}

// Channels lists the channels of the projects given, newest first, before the id given.
func (s *Store) Channels(ctx context.Context, projects []uuid.UUID, before *uuid.UUID, limit int) ([]barrage.Channel, error) {
	rows, err := s.q.NotificationChannelList(ctx, s.pool, dbsqlc.NotificationChannelListParams{Projects: projects, Before: before, MaxRows: int32(limit)})
	if err != nil {
		return nil, err
	}
	return each(rows, channelFromRow), nil
}

// ChannelChange is what an update of a channel changes; nil fields stay.
type ChannelChange struct {
	Name   *string
	Events []barrage.Event
	// Paused pauses (with Reason) or resumes the channel.
	Paused *bool
	Reason string
}

// UpdateChannel changes a channel of the projects given.
func (s *Store) UpdateChannel(ctx context.Context, projects []uuid.UUID, id uuid.UUID, ch ChannelChange) (barrage.Channel, error) {
	arg := dbsqlc.NotificationChannelUpdateParams{ID: id, Projects: projects, Name: ch.Name, Paused: ch.Paused, PausedReason: ch.Reason}
	if ch.Events != nil {
		arg.Events = eventStrings(ch.Events)
	}
	row, err := s.q.NotificationChannelUpdate(ctx, s.pool, arg)
	if errors.Is(err, pgx.ErrNoRows) {
		return barrage.Channel{}, translate(err, "notification channel")
	}
	return channelFromRow(row), translate(err, "a channel of this name in the project")
}

// DeleteChannel removes a channel of the projects given, with its deliveries.
func (s *Store) DeleteChannel(ctx context.Context, projects []uuid.UUID, id uuid.UUID) error {
	n, err := s.q.NotificationChannelDelete(ctx, s.pool, dbsqlc.NotificationChannelDeleteParams{ID: id, Projects: projects})
	if err == nil && n == 0 {
		return barrage.Errorf(barrage.ErrNotFound, "notification channel not found")
	}
	return err
}

// ChannelsFor are the channels of project that want event and are not paused.
func (s *Store) ChannelsFor(ctx context.Context, project uuid.UUID, event barrage.Event) ([]barrage.Channel, error) {
	rows, err := s.q.NotificationChannelsFor(ctx, s.pool, dbsqlc.NotificationChannelsForParams{ProjectID: project, Event: string(event)})
	if err != nil {
		return nil, err
	}
	return each(rows, channelFromRow), nil
}

// AgentsOffline finds the agents of projects silent since before that went offline since they
// were last told of, and, in the same transaction, stores and queues the deliveries tell makes
// of each and its project's channels that want event: each time an agent goes offline is told
// once. It returns how many agents went.
func (s *Store) AgentsOffline(ctx context.Context, before time.Time, event barrage.Event,
	tell func(a barrage.Agent, channels []barrage.Channel) ([]barrage.Delivery, error)) (int, error) {
	if s.notifier == nil {
		return 0, errors.New("agents offline: the store queues no delivery (UseNotifier)")
	}
	var n int
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := s.q.AgentsWentOffline(ctx, tx, &before)
		if err != nil {
			return err
		}
		n = len(rows)
		var all []barrage.Delivery
		for _, r := range rows {
			chs, err := s.q.NotificationChannelsFor(ctx, tx, dbsqlc.NotificationChannelsForParams{ProjectID: *r.ProjectID, Event: string(event)})
			if err != nil {
				return err
			}
			ds, err := tell(agentFromRow(r, false), each(chs, channelFromRow))
			if err != nil {
				return err
			}
			all = append(all, ds...)
		}
		return s.queueDeliveries(ctx, tx, all)
	})
	return n, err
}

// CreateDeliveries stores deliveries and queues each (UseNotifier), in one transaction: a
// delivery stored is a delivery that will be attempted.
func (s *Store) CreateDeliveries(ctx context.Context, ds []barrage.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	if s.notifier == nil {
		return errors.New("deliveries: the store queues none (UseNotifier)")
	}
	return s.inTx(ctx, func(tx pgx.Tx) error { return s.queueDeliveries(ctx, tx, ds) })
}

// queueDeliveries stores deliveries and queues each, in tx.
func (s *Store) queueDeliveries(ctx context.Context, tx pgx.Tx, ds []barrage.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(ds))
	for i, d := range ds {
		err := s.q.NotificationDeliveryInsert(ctx, tx, dbsqlc.NotificationDeliveryInsertParams{ID: d.ID, ChannelID: d.ChannelID,
			Event: string(d.Event), Payload: d.Payload})
		if err != nil {
			return translate(err, "delivery")
		}
		ids[i] = d.ID
	}
	return s.notifier.Deliver(ctx, tx, ids)
}

// Delivery reads a delivery by id.
func (s *Store) Delivery(ctx context.Context, id uuid.UUID) (barrage.Delivery, error) {
	row, err := s.q.NotificationDeliveryGet(ctx, s.pool, id)
	return deliveryFromRow(row), translate(err, "delivery")
}

// DeliveryAttempted records an attempt of a pending delivery: its HTTP status (nil when there
// was none), its error, and its state after it. A delivery that failed for good counts against
// its channel, which is paused, with reason, at pauseAfter such in a row; one delivered clears
// the count. It returns the delivery and its channel as they are now.
func (s *Store) DeliveryAttempted(ctx context.Context, id uuid.UUID, status *int, lastError string, state barrage.DeliveryState,
	pauseAfter int, reason string) (barrage.Delivery, barrage.Channel, error) {
	var d barrage.Delivery
	var c barrage.Channel
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		row, err := s.q.NotificationDeliveryAttempted(ctx, tx, dbsqlc.NotificationDeliveryAttemptedParams{ID: id,
			LastStatus: int32Ptr(status), LastError: lastError, State: string(state)})
		if err != nil {
			return translate(err, "pending delivery")
		}
		d = deliveryFromRow(row)
		switch state {
		case barrage.DeliveryFailed:
			ch, err := s.q.NotificationChannelFailed(ctx, tx, dbsqlc.NotificationChannelFailedParams{ID: d.ChannelID, PauseAfter: int32(pauseAfter), Reason: reason})
			if err != nil {
				return translate(err, "notification channel")
			}
			c = channelFromRow(ch)
		case barrage.DeliveryDelivered:
			return s.q.NotificationChannelSucceeded(ctx, tx, d.ChannelID)
		}
		return nil
	})
	return d, c, err
}

// Deliveries lists a channel's deliveries, newest first, before the id given.
func (s *Store) Deliveries(ctx context.Context, channel uuid.UUID, before *uuid.UUID, limit int) ([]barrage.Delivery, error) {
	rows, err := s.q.NotificationDeliveryList(ctx, s.pool, dbsqlc.NotificationDeliveryListParams{ChannelID: channel, Before: before, MaxRows: int32(limit)})
	if err != nil {
		return nil, err
	}
	return each(rows, deliveryFromRow), nil
}

func channelFromRow(r dbsqlc.NotificationChannel) barrage.Channel {
	c := barrage.Channel{ID: r.ID, ProjectID: r.ProjectID, CreatedBy: r.CreatedBy, Name: r.Name, Kind: barrage.ChannelKind(r.Kind),
		TargetSealed: r.TargetSealed, TargetHint: r.TargetHint, SecretSealed: r.SecretSealed, Failures: int(r.Failures),
		PausedAt: r.PausedAt, PausedReason: r.PausedReason, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	for _, e := range r.Events {
		c.Events = append(c.Events, barrage.Event(e))
	}
	return c
}

func deliveryFromRow(r dbsqlc.NotificationDelivery) barrage.Delivery {
	d := barrage.Delivery{ID: r.ID, ChannelID: r.ChannelID, Event: barrage.Event(r.Event), Payload: r.Payload,
		State: barrage.DeliveryState(r.State), Attempts: int(r.Attempts), LastError: r.LastError, CreatedAt: r.CreatedAt,
		AttemptedAt: r.AttemptedAt, DoneAt: r.DoneAt}
	if r.LastStatus != nil {
		s := int(*r.LastStatus)
		d.LastStatus = &s
	}
	return d
}

func eventStrings(es []barrage.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = string(e)
	}
	return out
}

func int32Ptr(v *int) *int32 {
	if v == nil {
		return nil
	}
	n := int32(*v)
	return &n
}

// each maps rows to what they hold.
func each[R, T any](rows []R, f func(R) T) []T {
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = f(r)
	}
	return out
}
