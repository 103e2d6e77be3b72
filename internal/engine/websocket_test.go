package engine_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/engine"
	"github.com/barrage-load/barrage/internal/metrics"
	"github.com/barrage-load/barrage/internal/netpolicy"
	"github.com/barrage-load/barrage/internal/run"
	"github.com/barrage-load/barrage/internal/script"
)

// chatServer is a WebSocket chat of one room: "join NAME" answers {"type":"joined","user":NAME},
// any other text {"type":"echo","text":TEXT}; "silence" is not answered.
func chatServer(t *testing.T) *httptest.Server {
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("token") != "s3cret" {
			http.Error(w, "who are you?", http.StatusForbidden)
			return
		}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			text := string(msg)
			var answer map[string]string
			switch {
			case strings.HasPrefix(text, "join "):
				answer = map[string]string{"type": "joined", "user": strings.TrimPrefix(text, "join ")}
			case text == "silence":
				continue
			default:
				answer = map[string]string{"type": "echo", "text": text}
			}
			out, _ := json.Marshal(answer)
			if c.WriteMessage(websocket.TextMessage, out) != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestAWebSocketChatIsMeasuredAndChecked(t *testing.T) {
	t.Parallel()
	srv := chatServer(t)
	ws := "ws" + strings.TrimPrefix(srv.URL, "http")
	s := parse(t, ws, `
version: 1
variables: { constants: { who: ada } }
session:
  groups:
    - name: g
      requests:
        - name: chat
          url: "${target}/chat?token=s3cret"
          websocket:
            - send: "join ${who}"
            - receive: joined
              extract: [ { var: me, json: "$.user" } ]
              assert: [ { json: "$.type", equals: joined } ]
            - send: "hello from ${me}"
            - receive:
              assert: [ { body_contains: hello from ada } ]
load: { vus: 2, iterations: 6 }
`)
	res := runScript(t, s, engine.Options{})
	// The upgrade is a request; the session and its receives are steps, which "all requests"
	// does not count.
	for _, k := range []metrics.Key{metrics.RequestKey("chat connect"), metrics.StepKey("chat"), metrics.StepKey("joined"), metrics.StepKey("chat receive 2")} {
		st := statsOf(t, res, k)
		require.Equal(t, int64(6), st.Requests, "%s", k)
		require.Zero(t, st.Failed(), "%s: %v", k, res.ErrorSamples)
	}
	require.Equal(t, []string{"chat connect"}, res.Requests)
	require.Equal(t, int64(6), res.Total.Requests().Requests)
	session := statsOf(t, res, metrics.StepKey("chat"))
	require.Positive(t, session.BytesOut)
	require.GreaterOrEqual(t, session.Latency.Min(), statsOf(t, res, metrics.StepKey("joined")).Latency.Min(), "the session holds its round trips")
}

func TestAWebSocketFailsAsAServerAnswers(t *testing.T) {
	t.Parallel()
	srv := chatServer(t)
	s := parse(t, srv.URL, `
version: 1
session:
  groups:
    - name: g
      requests:
        - { name: refused, url: "${target}/chat?token=wrong", websocket: [ { send: hi } ] }
        - name: quiet
          url: "${target}/chat?token=s3cret"
          websocket:
            - send: silence
            - { receive: no answer, timeout: 200ms }
        - name: wrong
          url: "${target}/chat?token=s3cret"
          websocket:
            - send: hi
            - { receive: echoed, assert: [ { json: "$.text", equals: bye } ] }
load: { vus: 1, iterations: 1 }
`)
	res := runScript(t, s, engine.Options{})
	require.Equal(t, int64(1), stats(t, res, "refused connect").Errors[metrics.Err4xx], "a 403 is no upgrade")
	require.Equal(t, int64(1), statsOf(t, res, metrics.StepKey("refused")).Errors[metrics.Err4xx])
	require.Equal(t, int64(1), statsOf(t, res, metrics.StepKey("no answer")).Errors[metrics.ErrTimeout])
	require.Equal(t, int64(1), statsOf(t, res, metrics.StepKey("echoed")).Errors[metrics.ErrAssertion])
	// A receive's assertion is tallied under its step's name.
	check := statsOf(t, res, metrics.CheckKey(script.Check{Request: "echoed", Name: "json $.text equals \"bye\""}.Label()))
	require.Equal(t, int64(1), check.Requests)
	require.Equal(t, int64(1), check.Errors[metrics.ErrAssertion])

	var events []string
	require.NoError(t, engine.Debug(context.Background(), s, engine.Options{Trace: func(ev run.TraceEvent) {
		events = append(events, ev.Method+" "+ev.Request+" "+string(ev.RequestBody)+string(ev.ResponseBody))
	}}))
	require.Contains(t, events, "WS SEND wrong hi")
	require.Contains(t, events, `WS RECEIVE echoed {"text":"hi","type":"echo"}`)
}

// A message larger than the body cap is kept to the cap and read past: a server's giant message
// costs the generator its bytes, not its memory.
func TestAGiantMessageIsKeptToTheCap(t *testing.T) {
	t.Parallel()
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		wr, err := c.NextWriter(websocket.TextMessage)
		if err != nil {
			return
		}
		chunk := []byte(strings.Repeat("x", 1<<20))
		for range 64 { // 64 MiB in one message
			if _, err := wr.Write(chunk); err != nil {
				return
			}
		}
		wr.Close()
		_, _, _ = c.ReadMessage()
	}))
	defer srv.Close()
	s := parse(t, srv.URL, `
version: 1
session: { groups: [ { name: g, requests: [ { name: big, url: "${target}/", websocket: [ { receive: giant, assert: [ { body_contains: xxx } ] } ] } ] } ] }
load: { vus: 1, iterations: 1 }
`)
	var got []byte
	require.NoError(t, engine.Debug(context.Background(), s, engine.Options{BodyCap: 1 << 16, Trace: func(ev run.TraceEvent) {
		if ev.Request == "giant" {
			got = ev.ResponseBody
		}
	}}))
	require.Len(t, got, 1<<16, "the first 64 KiB kept")
}

// An upgrade the agent's policy refuses ends the run, as a refused request does: every iteration
// would be refused alike.
func TestARefusedUpgradeEndsTheRun(t *testing.T) {
	t.Parallel()
	srv := chatServer(t)
	s := parse(t, srv.URL, `
version: 1
session: { groups: [ { name: g, requests: [ { name: chat, url: "${target}/chat?token=s3cret", websocket: [ { send: hi } ] } ] } ] }
load: { vus: 2, duration: 1m }
`)
	res := runScript(t, s, engine.Options{Targets: &netpolicy.Policy{}})
	require.Contains(t, res.Exhausted, "request chat")
	require.Equal(t, run.Completed, res.Stop.Reason, "ended by the refusal, not by the test's minute")
}
