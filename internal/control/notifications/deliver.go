package notifications

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/summary"
)

// event is what a delivery carries: the webhook's JSON body, and what Slack and email messages
// are written from.
type event struct {
	// ID is the delivery's: a receiver that sees it twice (a retry after an answer lost on the
	// way) has seen it already.
	ID        uuid.UUID     `json:"id"`
	Event     barrage.Event `json:"event"`
	CreatedAt time.Time     `json:"created_at"`
	ProjectID uuid.UUID     `json:"project_id"`
	Channel   string        `json:"channel"`
	// Message says what happened in a line.
	Message  string         `json:"message"`
	Run      *runEvent      `json:"run,omitempty"`
	Schedule *scheduleEvent `json:"schedule,omitempty"`
	Agent    *agentEvent    `json:"agent,omitempty"`
}

// agentEvent is an agent of a project that went offline.
type agentEvent struct {
	ID         uuid.UUID `json:"id"`
	Name       string    `json:"name"`
	LastSeenAt time.Time `json:"last_seen_at"`
}

// scheduleEvent is a schedule's firing that started no run.
type scheduleEvent struct {
	ID     uuid.UUID `json:"id"`
	Name   string    `json:"name"`
	TestID uuid.UUID `json:"test_id"`
	DueAt  time.Time `json:"due_at"`
	Error  string    `json:"error"`
	// Paused says the schedule paused itself, and why.
	Paused string `json:"paused,omitempty"`
}

// runEvent is a run in an event: how it ended, its figures, what failed, and what to look at.
type runEvent struct {
	ID               uuid.UUID         `json:"id"`
	Script           string            `json:"script"`
	TestID           *uuid.UUID        `json:"test_id,omitempty"`
	State            barrage.RunState  `json:"state"`
	Reason           string            `json:"reason"`
	StartedBy        uuid.UUID         `json:"started_by"`
	URL              string            `json:"url"`
	ReportURL        string            `json:"report_url"`
	Requests         int64             `json:"requests"`
	RPS              float64           `json:"rps"`
	P95MS            float64           `json:"p95_ms"`
	ErrorRate        float64           `json:"error_rate"`
	ThresholdsFailed []string          `json:"thresholds_failed"`
	Baseline         *baselineEvent    `json:"baseline,omitempty"`
	Insights         []summary.Insight `json:"insights"`
}

type baselineEvent struct {
	RunID       uuid.UUID `json:"run_id"`
	Verdict     string    `json:"verdict"`
	Regressions []string  `json:"regressions"`
}

// RunEnded tells the channels of run id's project that want them what its end makes: finished,
// failed (with why), thresholds failed, regressed against its test's baseline. A canceled run
// tells nothing: someone stopped it. It is the job the run's end queued, once per run.
func (s *Service) RunEnded(ctx context.Context, id uuid.UUID) error {
	r, err := s.store.RunForAgent(ctx, id)
	if err != nil {
		return err
	}
	if r.State == barrage.RunCanceled {
		return nil
	}
	raw, err := s.store.RunSummary(ctx, []uuid.UUID{r.ProjectID}, id)
	if err != nil {
		return err
	}
	var sum summary.Document
	if err := json.Unmarshal(raw, &sum); err != nil {
		return fmt.Errorf("run %s: summary: %w", id, err)
	}
	run := s.runEvent(r, &sum)
	var happened []event
	switch r.State {
	case barrage.RunFinished:
		happened = append(happened, event{Event: barrage.EventRunFinished, Message: fmt.Sprintf("Run %s (%s) finished: %d requests, %.1f/s, p95 %s, %.2f%% errors.",
			r.ID, run.Script, run.Requests, run.RPS, summary.MillisText(run.P95MS), 100*run.ErrorRate)})
	default:
		happened = append(happened, event{Event: barrage.EventRunFailed, Message: fmt.Sprintf("Run %s (%s) ended %s: %s.", r.ID, run.Script,
			strings.ReplaceAll(string(r.State), "_", " "), r.Reason)})
	}
	if len(run.ThresholdsFailed) > 0 {
		happened = append(happened, event{Event: barrage.EventThresholdsFailed, Message: fmt.Sprintf("Run %s (%s): %d threshold(s) failed: %s.",
			r.ID, run.Script, len(run.ThresholdsFailed), strings.Join(run.ThresholdsFailed, "; "))})
	}
	if b := run.Baseline; b != nil && b.Verdict == summary.Regressed {
		happened = append(happened, event{Event: barrage.EventRunRegressed, Message: fmt.Sprintf("Run %s (%s) regressed against its test's baseline, run %s: %s.",
			r.ID, run.Script, b.RunID, strings.Join(b.Regressions, ", "))})
	}
	var ds []barrage.Delivery
	for _, e := range happened {
		if len(run.Insights) > 0 {
			e.Message += " Look at: " + run.Insights[0].Title + "."
		}
		e.Run = run
		channels, err := s.store.ChannelsFor(ctx, r.ProjectID, e.Event)
		if err != nil {
			return err
		}
		for _, c := range channels {
			d, err := s.delivery(c, e.Event, e)
			if err != nil {
				return err
			}
			ds = append(ds, d)
		}
	}
	return s.store.CreateDeliveries(ctx, ds)
}

// ScheduleFailed tells the channels of schedule sc's project that want it that its firing due
// at dueAt started no run, and why; pause says why the schedule paused itself, when it did.
func (s *Service) ScheduleFailed(ctx context.Context, sc barrage.Schedule, dueAt time.Time, why, pause string) error {
	e := event{Message: fmt.Sprintf("Schedule %q could not start its run due at %s: %s.", sc.Name, dueAt.UTC().Format(time.RFC3339), why),
		Schedule: &scheduleEvent{ID: sc.ID, Name: sc.Name, TestID: sc.TestID, DueAt: dueAt.UTC(), Error: why, Paused: pause}}
	if pause != "" {
		e.Message += " It paused itself: " + pause + "."
	}
	channels, err := s.store.ChannelsFor(ctx, sc.ProjectID, barrage.EventScheduleFailed)
	if err != nil {
		return err
	}
	ds := make([]barrage.Delivery, 0, len(channels))
	for _, c := range channels {
		d, err := s.delivery(c, barrage.EventScheduleFailed, e)
		if err != nil {
			return err
		}
		ds = append(ds, d)
	}
	return s.store.CreateDeliveries(ctx, ds)
}

// AgentsOffline tells the channels that want it of each agent of their project that went offline
// (silent past barrage.AgentOnlineWithin) since it was last told of: once each time it goes
// (the control plane's housekeeping, every few seconds).
func (s *Service) AgentsOffline(ctx context.Context) error {
	n, err := s.store.AgentsOffline(ctx, s.cfg.Now().Add(-barrage.AgentOnlineWithin), barrage.EventAgentOffline,
		func(a barrage.Agent, channels []barrage.Channel) ([]barrage.Delivery, error) {
			e := event{Message: fmt.Sprintf("Agent %q went offline: it was last seen at %s.", a.Name, a.LastSeenAt.UTC().Format(time.RFC3339)),
				Agent: &agentEvent{ID: a.ID, Name: a.Name, LastSeenAt: a.LastSeenAt.UTC()}}
			ds := make([]barrage.Delivery, 0, len(channels))
			for _, c := range channels {
				d, err := s.delivery(c, barrage.EventAgentOffline, e)
				if err != nil {
					return nil, err
				}
				ds = append(ds, d)
			}
			return ds, nil
		})
	if n > 0 {
		s.log.InfoContext(ctx, "agents went offline", slog.Int("count", n))
	}
	return err
}

// runEvent is run r, summarized in sum, as events tell it.
func (s *Service) runEvent(r barrage.Run, sum *summary.Document) *runEvent {
	e := &runEvent{ID: r.ID, Script: r.Manifest.ScriptName, TestID: r.Manifest.TestID, State: r.State, Reason: r.Reason,
		StartedBy: r.OwnerID, URL: s.link("/runs/" + r.ID.String()), ReportURL: s.link("/v1/runs/" + r.ID.String() + "/report"),
		Requests: sum.Total.Count, RPS: sum.Total.RPS, P95MS: sum.Total.P95MS, ErrorRate: sum.Total.ErrorRate,
		ThresholdsFailed: []string{}, Insights: sum.Findings()}
	if e.Insights == nil {
		e.Insights = []summary.Insight{}
	}
	for _, t := range sum.Thresholds {
		if !t.Passed {
			e.ThresholdsFailed = append(e.ThresholdsFailed, t.String())
		}
	}
	if b := sum.Baseline; b != nil {
		e.Baseline = &baselineEvent{RunID: b.RunID, Verdict: b.Verdict, Regressions: b.Regressions()}
		if e.Baseline.Regressions == nil {
			e.Baseline.Regressions = []string{}
		}
	}
	return e
}

// link is path on the server: absolute when its public URL is known.
func (s *Service) link(path string) string { return strings.TrimRight(s.cfg.PublicURL, "/") + path }

// delivery is e, of kind ev, to channel c, pending.
func (s *Service) delivery(c barrage.Channel, ev barrage.Event, e event) (barrage.Delivery, error) {
	d := barrage.Delivery{ID: uuid.Must(uuid.NewV7()), ChannelID: c.ID, Event: ev, State: barrage.DeliveryPending}
	e.ID, e.Event, e.CreatedAt, e.ProjectID, e.Channel = d.ID, ev, s.cfg.Now().UTC(), c.ProjectID, c.Name
	var err error
	d.Payload, err = json.Marshal(e)
	return d, err
}

// errRetry is a failed attempt that will be tried again.
var errRetry = errors.New("delivery failed; it is tried again")

// Deliver makes an attempt of delivery id; last says it is the last one its job makes. An
// attempt that fails, not the last, returns an error, so that the job tries again after its
// backoff. The last that fails fails the delivery for good, and counts against its channel.
// A delivery whose channel was paused or removed meanwhile is skipped.
func (s *Service) Deliver(ctx context.Context, id uuid.UUID, last bool) error {
	d, err := s.store.Delivery(ctx, id)
	if errors.Is(err, barrage.ErrNotFound) {
		return nil // its channel was removed
	} else if err != nil {
		return err
	}
	if d.State != barrage.DeliveryPending {
		return nil
	}
	c, err := s.store.ChannelByID(ctx, d.ChannelID)
	if err != nil {
		return err
	}
	if c.PausedAt != nil && d.Event != barrage.EventTest {
		_, _, err := s.store.DeliveryAttempted(ctx, id, nil, "the channel was paused: "+c.PausedReason, barrage.DeliverySkipped, s.cfg.PauseAfter, "")
		return err
	}
	status, sendErr := s.send(ctx, c, d)
	state, detail := barrage.DeliveryDelivered, ""
	switch {
	case sendErr == nil:
	case last:
		state, detail = barrage.DeliveryFailed, sendErr.Error()
	default:
		state, detail = barrage.DeliveryPending, sendErr.Error()
	}
	reason := fmt.Sprintf("paused after %d deliveries in a row failed every attempt; the last: %s", s.cfg.PauseAfter, detail)
	_, ch, err := s.store.DeliveryAttempted(ctx, id, status, detail, state, s.cfg.PauseAfter, reason)
	if err != nil {
		return err
	}
	switch state {
	case barrage.DeliveryPending:
		return fmt.Errorf("%w: %s", errRetry, detail)
	case barrage.DeliveryFailed:
		s.log.WarnContext(ctx, "notification failed", slog.String("channel_id", c.ID.String()), slog.String("delivery_id", id.String()),
			slog.String("error", detail))
		if ch.PausedAt != nil && ch.Failures == s.cfg.PauseAfter {
			s.log.WarnContext(ctx, "notification channel paused", slog.String("channel_id", c.ID.String()), slog.String("reason", ch.PausedReason))
		}
	}
	return nil
}

// send makes one attempt of d to c: its HTTP status, when it got one, and why it failed. The
// errors never hold the channel's URL (a Slack webhook's URL is its secret).
func (s *Service) send(ctx context.Context, c barrage.Channel, d barrage.Delivery) (*int, error) {
	target, err := s.ring.Open(c.TargetSealed, c.ID[:])
	if err != nil {
		return nil, fmt.Errorf("the channel's target does not open with the server's keys: %w", err)
	}
	var e event
	if err := json.Unmarshal(d.Payload, &e); err != nil {
		return nil, fmt.Errorf("the delivery's payload: %w", err)
	}
	switch c.Kind {
	case barrage.ChannelEmail:
		return nil, s.mail(ctx, string(target), e)
	case barrage.ChannelSlack:
		body, _ := json.Marshal(map[string]string{"text": slackText(e)})
		return s.post(ctx, string(target), body, nil)
	}
	secret, err := s.ring.Open(c.SecretSealed, c.ID[:])
	if err != nil {
		return nil, fmt.Errorf("the channel's secret does not open with the server's keys: %w", err)
	}
	t := s.cfg.Now().Unix()
	headers := http.Header{
		"Barrage-Event":     {string(d.Event)},
		"Barrage-Delivery":  {d.ID.String()},
		"Barrage-Signature": {Sign(secret, t, d.Payload)},
	}
	return s.post(ctx, string(target), d.Payload, headers)
}

// Sign is a delivery's Barrage-Signature header: "t=<unix seconds>,v1=<hex HMAC-SHA256 of
// "<t>.<body>" with the channel's secret>", as Stripe signs its webhooks. A receiver computes
// the same over the body it got, compares in constant time, and refuses a t too far from now.
func Sign(secret []byte, t int64, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	fmt.Fprintf(mac, "%d.", t)
	mac.Write(body)
	return "t=" + strconv.FormatInt(t, 10) + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// post posts body as JSON to target; a 2xx answer delivers.
func (s *Service) post(ctx context.Context, target string, body []byte, headers http.Header) (*int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, errors.New("the channel's URL does not make a request")
	}
	for k, v := range headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "barrage/"+s.cfg.Version)
	res, err := s.client.Do(req)
	if err != nil {
		return nil, plain(err)
	}
	defer res.Body.Close()
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	status := res.StatusCode
	if status < 200 || status > 299 {
		return &status, fmt.Errorf("the receiver answered %s", res.Status)
	}
	return &status, nil
}

// plain is a failed request's error as a channel's delivery log shows it: without the URL (a
// Slack webhook's is its secret) and without the server's own resolver.
func plain(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return fmt.Errorf("lookup %s: %s", dns.Name, dns.Err)
	}
	return err
}

// slackText is e as a Slack message.
func slackText(e event) string {
	text := e.Message
	if e.Run != nil && e.Run.URL != "" {
		text += " <" + e.Run.URL + "|The run>"
	}
	return text
}

func netDialer(timeout time.Duration) net.Dialer { return net.Dialer{Timeout: timeout} }
