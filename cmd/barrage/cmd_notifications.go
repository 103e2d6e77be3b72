package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/barrage"
)

func runNotifications(ctx context.Context, e env, args []string) error {
	sub := map[string]func(context.Context, env, []string) error{
		"list": runNotificationsList, "create": runNotificationsCreate, "show": runNotificationsShow,
		"pause": runNotificationsPause, "resume": runNotificationsResume, "delete": runNotificationsDelete,
		"test": runNotificationsTest, "deliveries": runNotificationsDeliveries,
	}
	return dispatch(ctx, e, "notifications", sub, args)
}

func runNotificationsList(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "notifications list", "[--project P]")
	inProj := projectFlag(fs)
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	project, err := inProj.id(ctx, e, cl)
	if err != nil {
		return err
	}
	return printTable(e, "ID\tNAME\tKIND\tTARGET\tEVENTS\tSTATE",
		func(cursor *string) ([]api.NotificationChannel, *string, error) {
			res, err := cl.ListNotificationChannelsWithResponse(ctx, &api.ListNotificationChannelsParams{Project: project, Cursor: cursor})
			if err != nil {
				return nil, nil, err
			}
			if res.JSON200 == nil {
				return nil, nil, api.ProblemError(res.HTTPResponse, res.Body)
			}
			return res.JSON200.Items, res.JSON200.NextCursor, nil
		},
		func(c api.NotificationChannel) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", c.Id, c.Name, c.Kind, c.Target, eventsText(c.Events), channelState(c))
		})
}

// channelState is a channel's state in a word or a line: active, or paused and why.
func channelState(c api.NotificationChannel) string {
	if c.Paused {
		return "PAUSED: " + c.PausedReason
	}
	if c.Failures > 0 {
		return fmt.Sprintf("active (%d failed in a row)", c.Failures)
	}
	return "active"
}

// eventNames are the events a channel may want, comma-separated.
func eventNames() string {
	names := make([]string, len(barrage.Events))
	for i, ev := range barrage.Events {
		names[i] = string(ev)
	}
	return strings.Join(names, ", ")
}

func eventsText(es []api.NotificationEvent) string {
	names := make([]string, len(es))
	for i, ev := range es {
		names[i] = string(ev)
	}
	return strings.Join(names, ",")
}

func runNotificationsCreate(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "notifications create", "NAME (--webhook URL | --slack URL | --email ADDRESS) [--event E]... [--project P]")
	inProj := projectFlag(fs)
	webhook := fs.String("webhook", "", "post each event as signed JSON to this URL")
	slack := fs.String("slack", "", "post each event to this Slack-compatible incoming webhook")
	email := fs.String("email", "", "mail each event to this address (the server's operator must have set --smtp-addr)")
	var events multiFlag
	fs.Var(&events, "event", "an event to send (repeat; default every one): "+eventNames())
	name, err := positionalArg(fs, args)
	if err != nil {
		return err
	}
	body := api.NotificationChannelInput{Name: name}
	given := 0
	for _, k := range []struct {
		v    *string
		kind api.NotificationChannelInputKind
	}{{webhook, api.NotificationChannelInputKindWebhook}, {slack, api.NotificationChannelInputKindSlack}, {email, api.NotificationChannelInputKindEmail}} {
		if *k.v == "" {
			continue
		}
		given++
		body.Kind = k.kind
		if k.kind == api.NotificationChannelInputKindEmail {
			body.Email = k.v
		} else {
			body.Url = k.v
		}
	}
	if given != 1 {
		return usageError(errors.New("give one of --webhook URL, --slack URL or --email ADDRESS"))
	}
	if len(events) > 0 {
		es := make([]api.NotificationEvent, len(events))
		for i, ev := range events {
			es[i] = api.NotificationEvent(ev)
		}
		body.Events = &es
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	project, err := inProj.id(ctx, e, cl)
	if err != nil {
		return err
	}
	res, err := cl.CreateNotificationChannelWithResponse(ctx, &api.CreateNotificationChannelParams{Project: project}, body)
	if err != nil {
		return err
	}
	c := res.JSON201
	if c == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	fmt.Fprintf(e.stderr, "Channel %q (%s to %s) sends %s.\n", c.Name, c.Kind, c.Target, eventsText(c.Events))
	fmt.Fprintln(e.stdout, c.Id)
	if c.Secret != nil {
		fmt.Fprintln(e.stderr, "Its signing secret, shown this once (verify each delivery's Barrage-Signature with it; docs/automation.md):")
		fmt.Fprintln(e.stdout, *c.Secret)
	}
	return nil
}

func runNotificationsShow(ctx context.Context, e env, args []string) error {
	return byID(ctx, e, args, "notifications show", "channel", func(cl *api.ClientWithResponses, id uuid.UUID) error {
		res, err := cl.GetNotificationChannelWithResponse(ctx, id)
		if err != nil {
			return err
		}
		c := res.JSON200
		if c == nil {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
		fmt.Fprintf(e.stdout, "channel %s %q\nkind:    %s\ntarget:  %s\nevents:  %s\nstate:   %s\ncreated: %s\n", c.Id, c.Name, c.Kind, c.Target,
			eventsText(c.Events), channelState(*c), c.CreatedAt.Format(time.RFC3339))
		return nil
	})
}

func runNotificationsPause(ctx context.Context, e env, args []string) error {
	return setChannelPaused(ctx, e, args, "pause", true)
}

func runNotificationsResume(ctx context.Context, e env, args []string) error {
	return setChannelPaused(ctx, e, args, "resume", false)
}

func setChannelPaused(ctx context.Context, e env, args []string, verb string, paused bool) error {
	return byID(ctx, e, args, "notifications "+verb, "channel", func(cl *api.ClientWithResponses, id uuid.UUID) error {
		res, err := cl.UpdateNotificationChannelWithResponse(ctx, id, api.NotificationChannelUpdate{Paused: &paused})
		if err != nil {
			return err
		}
		if res.JSON200 == nil {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
		fmt.Fprintf(e.stderr, "Channel %q: %s.\n", res.JSON200.Name, channelState(*res.JSON200))
		return nil
	})
}

func runNotificationsDelete(ctx context.Context, e env, args []string) error {
	return byID(ctx, e, args, "notifications delete", "channel", func(cl *api.ClientWithResponses, id uuid.UUID) error {
		res, err := cl.DeleteNotificationChannelWithResponse(ctx, id)
		if err != nil {
			return err
		}
		if res.StatusCode() != 204 {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
		fmt.Fprintln(e.stderr, "Channel deleted, with its deliveries.")
		return nil
	})
}

func runNotificationsTest(ctx context.Context, e env, args []string) error {
	return byID(ctx, e, args, "notifications test", "channel", func(cl *api.ClientWithResponses, id uuid.UUID) error {
		res, err := cl.TestNotificationChannelWithResponse(ctx, id)
		if err != nil {
			return err
		}
		if res.JSON202 == nil {
			return api.ProblemError(res.HTTPResponse, res.Body)
		}
		fmt.Fprintf(e.stderr, "Test delivery %s queued: barrage notifications deliveries %s shows how it went.\n", res.JSON202.Id, id)
		fmt.Fprintln(e.stdout, res.JSON202.Id)
		return nil
	})
}

func runNotificationsDeliveries(ctx context.Context, e env, args []string) error {
	return byID(ctx, e, args, "notifications deliveries", "channel", func(cl *api.ClientWithResponses, id uuid.UUID) error {
		return printTable(e, "ID\tEVENT\tSTATE\tATTEMPTS\tSTATUS\tCREATED\tLAST ERROR",
			func(cursor *string) ([]api.NotificationDelivery, *string, error) {
				res, err := cl.ListNotificationDeliveriesWithResponse(ctx, id, &api.ListNotificationDeliveriesParams{Cursor: cursor})
				if err != nil {
					return nil, nil, err
				}
				if res.JSON200 == nil {
					return nil, nil, api.ProblemError(res.HTTPResponse, res.Body)
				}
				return res.JSON200.Items, res.JSON200.NextCursor, nil
			},
			func(d api.NotificationDelivery) string {
				status := "-"
				if d.LastStatus != nil {
					status = fmt.Sprint(*d.LastStatus)
				}
				return fmt.Sprintf("%s\t%s\t%s\t%d\t%s\t%s\t%s", d.Id, d.Event, d.State, d.Attempts, status, d.CreatedAt.Format(time.RFC3339), d.LastError)
			})
	})
}
