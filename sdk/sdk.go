// Package sdk is what a Barrage plugin is written with: a Go interface per hook, the types they
// exchange, and Serve, which runs a plugin as a go-plugin gRPC process. The host (Barrage's
// agent and `barrage run`) speaks to plugins through the same interfaces, so a plugin tested
// in-process with package sdktest behaves the same under load.
//
// A plugin implements one or more hooks:
//
//   - SessionElement produces variables (${name.var} in a script) once per run, per virtual
//     user, or per iteration;
//   - URLHook changes the requests it is attached to before they are sent and reads their
//     responses after, setting variables or failing the request;
//   - SourceModifier rewrites a script when it is prepared.
//
// See docs/plugins.md for a walk-through.
package sdk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ProtocolVersion is the plugin protocol this SDK speaks (sdk/proto/barrage/plugin/v1). It is
// negotiated in go-plugin's handshake.
const ProtocolVersion = 1

// Kind is a hook a plugin implements.
type Kind string

// The kinds of hook.
const (
	KindSessionElement Kind = "session-element"
	KindURL            Kind = "url"
	KindSourceModifier Kind = "source-modifier"
)

// Scope is how often a session element's variables change.
type Scope string

// The scopes of a session element.
const (
	// ScopeRun gives one set of values for the whole run.
	ScopeRun Scope = "run"
	// ScopeVU gives each virtual user a set of its own, kept for all its iterations.
	ScopeVU Scope = "vu"
	// ScopeIteration gives every iteration a fresh set.
	ScopeIteration Scope = "iteration"
)

// Vars is a set of variables by name.
type Vars map[string]string

// Info describes a plugin: what `barrage plugin check` and the marketplace show, and what the
// host checks a script's use of the plugin against.
type Info struct {
	Name        string
	Version     string
	Description string
	Kinds       []Kind
	// Scope is the scope a session element declares.
	Scope Scope
	// ConfigSchema is a JSON Schema (2020-12) for the config object a script gives the plugin.
	// The host validates the config against it before Configure. Empty accepts any object.
	ConfigSchema string
	// ProtocolVersion is the plugin protocol the plugin speaks.
	ProtocolVersion int
	// Network lists the hosts the plugin needs to reach, as host:port patterns (see
	// HostPattern); empty when it needs none. A plugin has no network unless a run grants it
	// hosts within this list.
	Network []string
}

// SessionElement produces variables for the session. The host calls Configure once, then Next
// as often as it needs values: it asks ahead of the virtual users, so one call serves many
// iterations.
type SessionElement interface {
	// Configure receives the plugin's config object from the script as JSON, already valid
	// against Info.ConfigSchema, and returns the names of the variables the plugin produces.
	Configure(ctx context.Context, config []byte) (variables []string, err error)
	// Next returns up to n sets of values; fewer is fine. When there will be no more values it
	// returns the last sets, if any, with ErrExhausted.
	Next(ctx context.Context, n int) ([]Vars, error)
}

// URLHook runs around each request it is attached to.
type URLHook interface {
	// Configure receives the plugin's config object from the script as JSON.
	Configure(ctx context.Context, config []byte) error
	// Before may change the request in place before it is sent. An error fails the request.
	Before(ctx context.Context, call Call, req *Request) error
	// After reads the response. It may set variables and fail the request with a reason
	// (Outcome.Fail). An error fails the request too, as a fault of the plugin.
	After(ctx context.Context, call Call, req *Request, resp *Response) (Outcome, error)
}

// AfterSkipper may be implemented by a URLHook whose After, as configured, has nothing to do.
// The host asks once, after Configure, and then skips every After call: a call across the
// process boundary costs tens of microseconds, and After is half of them.
type AfterSkipper interface {
	SkipAfter() bool
}

// PureBefore may be implemented by a URLHook whose Before, as configured, changes a request by
// what the request holds alone (its method, URL, headers and body): not by the Call, the time,
// a counter, randomness or anything the hook keeps. The host asks once, after Configure, and
// then keeps Before's changes to a request and makes them itself to an identical request, with
// no call: a signature of a request that does not change is computed once. A hook that adds a
// timestamp, a nonce or a counter is not pure. After is called as before.
type PureBefore interface {
	PureBefore() bool
}

// SourceModifier rewrites a script when it is prepared: the script and the result are JSON
// documents in the script format (docs/scripts.md). The host validates the result like any
// script.
type SourceModifier interface {
	Modify(ctx context.Context, script, config []byte) ([]byte, error)
}

// Call says which request a URL hook runs for.
type Call struct {
	// VU is the virtual user, from 1.
	VU int
	// Iteration is the virtual user's iteration, from 1.
	Iteration int64
	// Request is the request's name in the script.
	Request string
}

// Request is an HTTP request as a URL hook sees it.
type Request struct {
	Method string
	URL    string
	Header http.Header
	Body   []byte
}

// Response is what a URL hook sees of a response.
type Response struct {
	Status int
	Header http.Header
	// BodyPreview is the first bytes of the body (up to the host's preview size).
	BodyPreview []byte
	// Duration is the time from sending the request to the end of the response.
	Duration time.Duration
}

// Outcome is what a URL hook decides after a response.
type Outcome struct {
	// Vars are set for the virtual user, as extractors do.
	Vars Vars
	// Fail, when not empty, fails the request with this reason.
	Fail string
}

// ErrExhausted is returned by SessionElement.Next when there are no more values.
var ErrExhausted = errors.New("no more values")

// ConfigError says what is wrong with a plugin's config. Return one from Configure (or
// Modify) so that the script's author sees the field and the reason.
type ConfigError struct {
	// Field is a JSON path into the config object, such as "email.domain".
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	if e.Field == "" {
		return "config: " + e.Reason
	}
	return fmt.Sprintf("config.%s: %s", e.Field, e.Reason)
}

// Plugin is a plugin to serve: its description and the hooks it implements. At least one hook
// must be set.
type Plugin struct {
	Name        string
	Version     string
	Description string
	// ConfigSchema is a JSON Schema for the plugin's config object; see Info.ConfigSchema.
	ConfigSchema string
	// Scope is the scope of Element: how often its values change. Required with Element.
	Scope Scope
	// Network lists the hosts the plugin needs to reach over TCP, as host:port patterns such
	// as "db.example:5432", "*.example.com:443" or "*:5432" (see HostPattern). A run may grant
	// the plugin hosts within it; the plugin reaches them with Dial (or Transport). Leave it
	// empty for a plugin that needs no network: it then has none.
	Network []string

	Element SessionElement
	URL     URLHook
	Source  SourceModifier
}

// Info describes p.
func (p *Plugin) Info() Info {
	info := Info{
		Name: p.Name, Version: p.Version, Description: p.Description,
		ConfigSchema: p.ConfigSchema, ProtocolVersion: ProtocolVersion,
		Network: p.Network,
	}
	if p.Element != nil {
		info.Kinds = append(info.Kinds, KindSessionElement)
		info.Scope = p.Scope
	}
	if p.URL != nil {
		info.Kinds = append(info.Kinds, KindURL)
	}
	if p.Source != nil {
		info.Kinds = append(info.Kinds, KindSourceModifier)
	}
	return info
}

func (p *Plugin) validate() error {
	switch {
	case p.Name == "":
		return errors.New("sdk: Plugin.Name is empty")
	case p.Version == "":
		return errors.New("sdk: Plugin.Version is empty")
	case p.Element == nil && p.URL == nil && p.Source == nil:
		return errors.New("sdk: the plugin implements no hook: set Element, URL or Source")
	case p.Element != nil && p.Scope != ScopeRun && p.Scope != ScopeVU && p.Scope != ScopeIteration:
		return fmt.Errorf("sdk: Plugin.Scope %q: want run, vu or iteration", p.Scope)
	}
	if _, err := ParseHostPatterns(p.Network); err != nil {
		return fmt.Errorf("sdk: Plugin.Network: %w", err)
	}
	return nil
}
