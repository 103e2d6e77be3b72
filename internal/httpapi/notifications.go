package httpapi

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/notifications"
)

func (s *server) ListNotificationChannels(ctx context.Context, req api.ListNotificationChannelsRequestObject) (api.ListNotificationChannelsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	items, next, err := listPage(req.Params.Cursor, req.Params.Limit, func(before *uuid.UUID, limit int) (barrage.Page[barrage.Channel], error) {
		return s.notify.Channels(ctx, p, req.Params.Project, before, limit)
	}, toAPIChannel)
	return api.ListNotificationChannels200JSONResponse{Items: items, NextCursor: next}, err
}

func (s *server) CreateNotificationChannel(ctx context.Context, req api.CreateNotificationChannelRequestObject) (api.CreateNotificationChannelResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	in := notifications.ChannelInput{Project: req.Params.Project, Name: b.Name, Kind: barrage.ChannelKind(b.Kind), Events: eventsOf(b.Events)}
	if b.Url != nil {
		in.URL = *b.Url
	}
	if b.Email != nil {
		in.Email = *b.Email
	}
	c, secret, err := s.notify.CreateChannel(ctx, p, in)
	if err != nil {
		return nil, err
	}
	var out api.NotificationChannelCreated
	if err := convert(toAPIChannel(c), &out); err != nil {
		return nil, err
	}
	if secret != "" {
		out.Secret = &secret
	}
	return api.CreateNotificationChannel201JSONResponse(out), nil
}

func (s *server) GetNotificationChannel(ctx context.Context, req api.GetNotificationChannelRequestObject) (api.GetNotificationChannelResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.notify.Channel(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	return api.GetNotificationChannel200JSONResponse(toAPIChannel(c)), nil
}

func (s *server) UpdateNotificationChannel(ctx context.Context, req api.UpdateNotificationChannelRequestObject) (api.UpdateNotificationChannelResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	c, err := s.notify.UpdateChannel(ctx, p, req.Id, notifications.ChannelUpdate{Name: b.Name, Events: eventsOf(b.Events), Paused: b.Paused})
	if err != nil {
		return nil, err
	}
	return api.UpdateNotificationChannel200JSONResponse(toAPIChannel(c)), nil
}

func (s *server) DeleteNotificationChannel(ctx context.Context, req api.DeleteNotificationChannelRequestObject) (api.DeleteNotificationChannelResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.notify.DeleteChannel(ctx, p, req.Id); err != nil {
		return nil, err
	}
	return api.DeleteNotificationChannel204Response{}, nil
}

func (s *server) TestNotificationChannel(ctx context.Context, req api.TestNotificationChannelRequestObject) (api.TestNotificationChannelResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	d, err := s.notify.TestChannel(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	return api.TestNotificationChannel202JSONResponse(toAPIDelivery(d)), nil
}

func (s *server) ListNotificationDeliveries(ctx context.Context, req api.ListNotificationDeliveriesRequestObject) (api.ListNotificationDeliveriesResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	items, next, err := listPage(req.Params.Cursor, req.Params.Limit, func(before *uuid.UUID, limit int) (barrage.Page[barrage.Delivery], error) {
		return s.notify.Deliveries(ctx, p, req.Id, before, limit)
	}, toAPIDelivery)
	return api.ListNotificationDeliveries200JSONResponse{Items: items, NextCursor: next}, err
}

// eventsOf are the events of a request's list; nil when it has none.
func eventsOf(es *[]api.NotificationEvent) []barrage.Event {
	if es == nil {
		return nil
	}
	out := make([]barrage.Event, len(*es))
	for i, e := range *es {
		out[i] = barrage.Event(e)
	}
	return out
}

func toAPIChannel(c barrage.Channel) api.NotificationChannel {
	v := api.NotificationChannel{Id: c.ID, ProjectId: c.ProjectID, CreatedBy: c.CreatedBy, Name: c.Name, Kind: api.NotificationChannelKind(c.Kind),
		Target: c.TargetHint, Events: make([]api.NotificationEvent, len(c.Events)), Failures: c.Failures, Paused: c.PausedAt != nil,
		PausedAt: c.PausedAt, PausedReason: c.PausedReason, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	for i, e := range c.Events {
		v.Events[i] = api.NotificationEvent(e)
	}
	return v
}

func toAPIDelivery(d barrage.Delivery) api.NotificationDelivery {
	v := api.NotificationDelivery{Id: d.ID, ChannelId: d.ChannelID, Event: string(d.Event), State: api.NotificationDeliveryState(d.State),
		Attempts: d.Attempts, LastStatus: d.LastStatus, LastError: d.LastError, CreatedAt: d.CreatedAt, AttemptedAt: d.AttemptedAt,
		DoneAt: d.DoneAt, Payload: map[string]any{}}
	_ = json.Unmarshal(d.Payload, &v.Payload) // stored by the service from an event: it reads
	return v
}
