package barrage

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// ChannelKind is how a notification channel delivers.
type ChannelKind string

// The kinds of channel.
const (
	// ChannelWebhook posts the event as JSON, signed with HMAC-SHA256.
	ChannelWebhook ChannelKind = "webhook"
	// ChannelSlack posts a message to a Slack-compatible incoming webhook.
	ChannelSlack ChannelKind = "slack"
	// ChannelEmail mails the event, through the SMTP server the operator configured.
	ChannelEmail ChannelKind = "email"
)

// Event names what happened, for the channels that want it.
type Event string

// The events a channel may want.
const (
	EventRunFinished      Event = "run.finished"
	EventRunFailed        Event = "run.failed"
	EventThresholdsFailed Event = "run.thresholds_failed"
	EventRunRegressed     Event = "run.regressed"
	EventScheduleFailed   Event = "schedule.failed"
	EventAgentOffline     Event = "agent.offline"
	EventTest             Event = "channel.test"
)

// Events are the events a channel may subscribe to, in the order docs list them.
var Events = []Event{EventRunFinished, EventRunFailed, EventThresholdsFailed, EventRunRegressed, EventScheduleFailed, EventAgentOffline}

// Channel is a project's notification channel. Its target (a URL, an address) and a webhook's
// signing secret are sealed at rest; TargetHint is what may be shown of the target.
type Channel struct {
	ID           uuid.UUID
	ProjectID    uuid.UUID
	CreatedBy    *uuid.UUID
	Name         string
	Kind         ChannelKind
	TargetSealed []byte
	TargetHint   string
	SecretSealed []byte
	Events       []Event
	// Failures counts the deliveries in a row that failed every attempt.
	Failures     int
	PausedAt     *time.Time
	PausedReason string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// DeliveryState is where a delivery stands.
type DeliveryState string

// The states of a delivery.
const (
	DeliveryPending   DeliveryState = "pending"
	DeliveryDelivered DeliveryState = "delivered"
	DeliveryFailed    DeliveryState = "failed"
	// DeliverySkipped: its channel was paused, or removed, before it went.
	DeliverySkipped DeliveryState = "skipped"
)

// Delivery is one event sent to one channel, with its attempts.
type Delivery struct {
	ID          uuid.UUID
	ChannelID   uuid.UUID
	Event       Event
	Payload     json.RawMessage
	State       DeliveryState
	Attempts    int
	LastStatus  *int
	LastError   string
	CreatedAt   time.Time
	AttemptedAt *time.Time
	DoneAt      *time.Time
}
