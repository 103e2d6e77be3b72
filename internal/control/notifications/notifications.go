// Package notifications tells people when something happens to their runs: a project's channels
// (a webhook signed with HMAC-SHA256, a Slack-compatible incoming webhook, email through the
// operator's SMTP server), the events each wants, and the deliveries, each attempted again with
// backoff by the server's jobs until it is delivered or its attempts run out. A channel whose
// deliveries keep failing is paused and says why. Webhooks are dialled under the server's policy:
// no internal address unless the operator allows it.
package notifications

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/mail"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/audit"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/postgres"
	"github.com/barrage-load/barrage/internal/seal"
)

// Store is what notifications keep in PostgreSQL (*postgres.Store). Deliveries it creates are
// queued in the same transaction (postgres.Store.UseNotifier).
type Store interface {
	CreateChannel(ctx context.Context, c barrage.Channel, max int) (barrage.Channel, error)
	Channel(ctx context.Context, projects []uuid.UUID, id uuid.UUID) (barrage.Channel, error)
	ChannelByID(ctx context.Context, id uuid.UUID) (barrage.Channel, error)
	Channels(ctx context.Context, projects []uuid.UUID, before *uuid.UUID, limit int) ([]barrage.Channel, error)
	UpdateChannel(ctx context.Context, projects []uuid.UUID, id uuid.UUID, ch postgres.ChannelChange) (barrage.Channel, error)
	DeleteChannel(ctx context.Context, projects []uuid.UUID, id uuid.UUID) error
	ChannelsFor(ctx context.Context, project uuid.UUID, event barrage.Event) ([]barrage.Channel, error)
	CreateDeliveries(ctx context.Context, ds []barrage.Delivery) error
	AgentsOffline(ctx context.Context, before time.Time, event barrage.Event, tell func(barrage.Agent, []barrage.Channel) ([]barrage.Delivery, error)) (int, error)
	Delivery(ctx context.Context, id uuid.UUID) (barrage.Delivery, error)
	DeliveryAttempted(ctx context.Context, id uuid.UUID, status *int, lastError string, state barrage.DeliveryState, pauseAfter int, reason string) (barrage.Delivery, barrage.Channel, error)
	Deliveries(ctx context.Context, channel uuid.UUID, before *uuid.UUID, limit int) ([]barrage.Delivery, error)
	RunForAgent(ctx context.Context, id uuid.UUID) (barrage.Run, error)
	RunSummary(ctx context.Context, projects []uuid.UUID, id uuid.UUID) ([]byte, error)
	barrage.ProjectFinder
}

// SMTP is the operator's mail server, for email channels.
type SMTP struct {
	// Addr is host:port; From the sender's address; Username and Password, when set, log in
	// (PLAIN, over TLS: STARTTLS when the server offers it, else only to loopback).
	Addr, From, Username, Password string
}

// Config tunes notifications; zero fields take the defaults.
type Config struct {
	// Policy is the dial policy of webhook deliveries (nil: the zero policy, which refuses
	// every internal address).
	Policy *netpolicy.Policy
	// SMTP, when set, lets channels mail.
	SMTP *SMTP
	// PauseAfter is how many deliveries in a row may fail every attempt before their channel
	// is paused (default 3).
	PauseAfter int
	// MaxChannels bounds a project's channels (default 20).
	MaxChannels int
	// PublicURL is where people reach the server (its portal), for links in messages; empty
	// leaves the links relative.
	PublicURL string
	// Timeout bounds one attempt (default 10s).
	Timeout time.Duration
	// Version names the server in deliveries' User-Agent.
	Version string
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Service is notifications.
type Service struct {
	store  Store
	ring   *seal.Ring
	log    *slog.Logger
	cfg    Config
	client *http.Client
}

// New returns notifications on store, sealing targets and secrets with ring.
func New(store Store, ring *seal.Ring, log *slog.Logger, cfg Config) *Service {
	if cfg.PauseAfter <= 0 {
		cfg.PauseAfter = 3
	}
	if cfg.MaxChannels <= 0 {
		cfg.MaxChannels = 20
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Policy == nil {
		cfg.Policy = &netpolicy.Policy{Setting: "serve's --notify-allow (BARRAGE_NOTIFY_ALLOW)", Holder: "the server's"}
	}
	dialer := cfg.Policy.Dialer(netDialer(cfg.Timeout))
	client := &http.Client{
		Timeout:   cfg.Timeout,
		Transport: &http.Transport{DialContext: dialer.DialContext, Proxy: nil, TLSHandshakeTimeout: cfg.Timeout, MaxIdleConnsPerHost: 2},
		// A redirect is not followed: the channel's URL is where deliveries go.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Service{store: store, ring: ring, log: log, cfg: cfg, client: client}
}

// ChannelInput is a channel asked for.
type ChannelInput struct {
	// Project is where the channel lives (nil: the principal's token's project, else their
	// personal one).
	Project *uuid.UUID
	Name    string
	Kind    barrage.ChannelKind
	// URL is a webhook's or Slack channel's; Email an email channel's address.
	URL, Email string
	// Events are the events it wants (nil: every one).
	Events []barrage.Event
}

// maxURL bounds a channel's URL.
const maxURL = 2048

// CreateChannel makes a channel in a project where p is an editor. A webhook's signing secret
// is returned once, here, and never shown again.
func (s *Service) CreateChannel(ctx context.Context, p barrage.Principal, in ChannelInput) (barrage.Channel, string, error) {
	project, err := p.ProjectFor(in.Project, barrage.ProjectEditor)
	if err != nil {
		return barrage.Channel{}, "", err
	}
	c := barrage.Channel{ID: uuid.Must(uuid.NewV7()), ProjectID: project, CreatedBy: &p.User.ID, Kind: in.Kind}
	var fields []barrage.FieldError
	bad := func(field, reason string) { fields = append(fields, barrage.FieldError{Field: field, Reason: reason}) }
	if c.Name, err = channelName(in.Name); err != nil {
		bad("name", err.Error())
	}
	if c.Events, err = events(in.Events); err != nil {
		bad("events", err.Error())
	}
	var target string
	switch in.Kind {
	case barrage.ChannelWebhook, barrage.ChannelSlack:
		if in.Email != "" {
			bad("email", "a "+string(in.Kind)+" channel posts to its url: leave email out")
		}
		if c.TargetHint, err = s.checkURL(in.URL); err != nil {
			bad("url", err.Error())
		}
		target = in.URL
	case barrage.ChannelEmail:
		if in.URL != "" {
			bad("url", "an email channel mails its address: leave url out")
		}
		addr, err := mail.ParseAddress(in.Email)
		switch {
		case err != nil || addr.Name != "" || len(in.Email) > 254:
			bad("email", "want an email address, such as team@example.com")
		case s.cfg.SMTP == nil:
			bad("kind", "this server sends no email: its operator has not set --smtp-addr")
		default:
			target, c.TargetHint = addr.Address, addr.Address
		}
	default:
		bad("kind", "want webhook, slack or email")
	}
	if len(fields) > 0 {
		return barrage.Channel{}, "", &barrage.InvalidError{Fields: fields}
	}
	c.TargetSealed = s.ring.Seal([]byte(target), c.ID[:])
	var secret string
	if c.Kind == barrage.ChannelWebhook {
		secret = newSecret()
		c.SecretSealed = s.ring.Seal([]byte(secret), c.ID[:])
	}
	c, err = s.store.CreateChannel(ctx, c, s.cfg.MaxChannels)
	if err != nil {
		return barrage.Channel{}, "", err
	}
	audit.Object(ctx, c.ID.String())
	s.log.InfoContext(ctx, "notification channel created", slog.String("channel_id", c.ID.String()), slog.String("kind", string(c.Kind)))
	return c, secret, nil
}

// channelName checks a channel's name: 1 to 100 characters, printable.
func channelName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", errors.New("a channel needs a name")
	case utf8.RuneCountInString(name) > 100 || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", errors.New("at most 100 printable characters")
	}
	return name, nil
}

// events checks the events a channel wants: every one when none is named.
func events(es []barrage.Event) ([]barrage.Event, error) {
	if es == nil {
		return slices.Clone(barrage.Events), nil
	}
	if len(es) == 0 {
		return nil, errors.New("name at least one event, or leave events out for every one")
	}
	var out []barrage.Event
	for _, e := range es {
		if !slices.Contains(barrage.Events, e) {
			return nil, fmt.Errorf("%q is no event: want %s", e, eventList())
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

func eventList() string {
	names := make([]string, len(barrage.Events))
	for i, e := range barrage.Events {
		names[i] = string(e)
	}
	return strings.Join(names, ", ")
}

// checkURL checks a webhook's URL and returns what may be shown of it: its scheme and host. A
// literal address the server's policy refuses is refused now; a name is checked on every
// delivery, at the address it resolves to.
func (s *Service) checkURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return "", errors.New("a webhook needs the URL to post to")
	case len(raw) > maxURL:
		return "", fmt.Errorf("at most %d characters", maxURL)
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Hostname() == "":
		return "", errors.New("want an absolute http(s) URL, such as https://hooks.example.com/barrage")
	case u.User != nil:
		return "", errors.New("no user or password in the URL: the deliveries are signed instead")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("port %s: want 1 to 65535", port)
		}
	}
	if addr, err := netip.ParseAddr(u.Hostname()); err == nil {
		if err := s.cfg.Policy.Check(addr.Unmap()); err != nil {
			return "", err
		}
	}
	return u.Scheme + "://" + u.Host, nil
}

// newSecret is a webhook's signing secret.
func newSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return "whsec_" + base64.RawURLEncoding.EncodeToString(b)
}

// Channels lists the channels of p's projects (of project alone, when given), newest first.
func (s *Service) Channels(ctx context.Context, p barrage.Principal, project *uuid.UUID, before *uuid.UUID, limit int) (barrage.Page[barrage.Channel], error) {
	in, err := p.Listed(project)
	if err != nil {
		return barrage.Page[barrage.Channel]{}, err
	}
	rows, err := s.store.Channels(ctx, in, before, limit+1)
	if err != nil {
		return barrage.Page[barrage.Channel]{}, err
	}
	return barrage.NewPage(rows, limit, func(c barrage.Channel) uuid.UUID { return c.ID }), nil
}

// Channel reads channel id of one of p's projects.
func (s *Service) Channel(ctx context.Context, p barrage.Principal, id uuid.UUID) (barrage.Channel, error) {
	return s.store.Channel(ctx, p.Projects(barrage.ProjectViewer), id)
}

// ChannelUpdate is a change of a channel; nil fields stay.
type ChannelUpdate struct {
	Name   *string
	Events []barrage.Event
	Paused *bool
}

// UpdateChannel renames channel id, changes its events, pauses or resumes it (p an editor of
// its project).
func (s *Service) UpdateChannel(ctx context.Context, p barrage.Principal, id uuid.UUID, in ChannelUpdate) (barrage.Channel, error) {
	ch := postgres.ChannelChange{Paused: in.Paused}
	var fields []barrage.FieldError
	if in.Name != nil {
		name, err := channelName(*in.Name)
		if err != nil {
			fields = append(fields, barrage.FieldError{Field: "name", Reason: err.Error()})
		}
		ch.Name = &name
	}
	if in.Events != nil {
		es, err := events(in.Events)
		if err != nil {
			fields = append(fields, barrage.FieldError{Field: "events", Reason: err.Error()})
		}
		ch.Events = es
	}
	if len(fields) > 0 {
		return barrage.Channel{}, &barrage.InvalidError{Fields: fields}
	}
	if in.Paused != nil && *in.Paused {
		ch.Reason = "paused by " + p.User.Name
	}
	c, err := s.store.UpdateChannel(ctx, p.Projects(barrage.ProjectEditor), id, ch)
	return c, s.denied(ctx, p, err, id)
}

// DeleteChannel removes channel id and its deliveries (p an editor of its project).
func (s *Service) DeleteChannel(ctx context.Context, p barrage.Principal, id uuid.UUID) error {
	return s.denied(ctx, p, s.store.DeleteChannel(ctx, p.Projects(barrage.ProjectEditor), id), id)
}

// Deliveries lists the deliveries of channel id of one of p's projects, newest first.
func (s *Service) Deliveries(ctx context.Context, p barrage.Principal, id uuid.UUID, before *uuid.UUID, limit int) (barrage.Page[barrage.Delivery], error) {
	if _, err := s.Channel(ctx, p, id); err != nil {
		return barrage.Page[barrage.Delivery]{}, err
	}
	rows, err := s.store.Deliveries(ctx, id, before, limit+1)
	if err != nil {
		return barrage.Page[barrage.Delivery]{}, err
	}
	return barrage.NewPage(rows, limit, func(d barrage.Delivery) uuid.UUID { return d.ID }), nil
}

// TestChannel queues a test delivery to channel id (p an editor of its project), paused or not:
// what its receiver gets, signed as every delivery is.
func (s *Service) TestChannel(ctx context.Context, p barrage.Principal, id uuid.UUID) (barrage.Delivery, error) {
	c, err := s.store.Channel(ctx, p.Projects(barrage.ProjectEditor), id)
	if err != nil {
		return barrage.Delivery{}, s.denied(ctx, p, err, id)
	}
	d, err := s.delivery(c, barrage.EventTest, event{Message: fmt.Sprintf("A test of the channel %q from %s.", c.Name, p.User.Name)})
	if err != nil {
		return barrage.Delivery{}, err
	}
	return d, s.store.CreateDeliveries(ctx, []barrage.Delivery{d})
}

// denied explains a change of channel id that found nothing where p is an editor.
func (s *Service) denied(ctx context.Context, p barrage.Principal, err error, id uuid.UUID) error {
	return p.Denied(ctx, err, barrage.ProjectEditor, s.store, barrage.KindChannel, id)
}
