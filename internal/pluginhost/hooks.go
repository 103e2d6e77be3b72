package pluginhost

import (
	"context"
	"errors"

	"github.com/barrage-load/barrage/sdk"
)

// The hooks of a Process: the SDK's interfaces with a deadline on every call and errors that
// name the plugin.
var (
	_ sdk.SessionElement = element{}
	_ sdk.URLHook        = urlHook{}
	_ sdk.AfterSkipper   = urlHook{}
	_ sdk.SourceModifier = (*Process)(nil)
)

// Element returns the plugin's session element.
func (p *Process) Element() sdk.SessionElement { return element{p} }

// URL returns the plugin's URL hook. Calls from many VUs share one stream in batches.
func (p *Process) URL() sdk.URLHook { return urlHook{p} }

// Modify runs the plugin's source modifier.
func (p *Process) Modify(ctx context.Context, script, config []byte) ([]byte, error) {
	ctx, cancel := p.callCtx(ctx)
	defer cancel()
	out, err := p.sdk.Modify(ctx, script, config)
	return out, p.wrap(ctx, err)
}

type element struct{ p *Process }

func (e element) Configure(ctx context.Context, config []byte) ([]string, error) {
	ctx, cancel := e.p.callCtx(ctx)
	defer cancel()
	vars, err := e.p.sdk.Element().Configure(ctx, config)
	return vars, e.p.wrap(ctx, err)
}

func (e element) Next(ctx context.Context, n int) ([]sdk.Vars, error) {
	ctx, cancel := e.p.callCtx(ctx)
	defer cancel()
	sets, err := e.p.sdk.Element().Next(ctx, n)
	if errors.Is(err, sdk.ErrExhausted) {
		return sets, err
	}
	return sets, e.p.wrap(ctx, err)
}

type urlHook struct{ p *Process }

func (u urlHook) Configure(ctx context.Context, config []byte) error {
	ctx, cancel := u.p.callCtx(ctx)
	defer cancel()
	return u.p.wrap(ctx, u.p.sdk.URL().Configure(ctx, config))
}

// Before and After are bounded by the client's call timeout (set at start), not by a context
// each: on the request path a timer per call costs more than the call's own work.
func (u urlHook) Before(ctx context.Context, call sdk.Call, req *sdk.Request) error {
	return u.p.wrap(ctx, u.p.sdk.URL().Before(ctx, call, req))
}

func (u urlHook) After(ctx context.Context, call sdk.Call, req *sdk.Request, resp *sdk.Response) (sdk.Outcome, error) {
	out, err := u.p.sdk.URL().After(ctx, call, req, resp)
	return out, u.p.wrap(ctx, err)
}

func (u urlHook) SkipAfter() bool {
	s, ok := u.p.sdk.URL().(sdk.AfterSkipper)
	return ok && s.SkipAfter()
}
