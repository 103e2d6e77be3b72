package engine

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/script"
)

// Only a JSON assertion or extractor reads the body as JSON: regex, text, header and cookie
// checks leave it as bytes.
func TestOnlyJSONChecksReadTheBodyAsJSON(t *testing.T) {
	t.Parallel()
	s, err := script.Parse([]byte(`
version: 1
session:
  groups:
    - name: g
      requests:
        - name: bytes
          url: http://127.0.0.1:1/
          extract:
            - { var: a, regex: "id=(\\d+)" }
            - { var: b, header: X-Id }
            - { var: c, cookie: session }
          assert:
            - { status: 200 }
            - { body_contains: "id=" }
            - { body_matches: "id=\\d+" }
            - { max_duration: 1s }
        - name: extracts
          url: http://127.0.0.1:1/
          extract: [ { var: d, json: $.id } ]
        - name: asserts
          url: http://127.0.0.1:1/
          assert: [ { json: $.id, exists: true } ]
load: { vus: 1, iterations: 1 }
`), script.ParseOptions{})
	require.NoError(t, err)
	p, err := compile(s, Options{})
	require.NoError(t, err)
	require.Len(t, p.requests, 3)
	for _, cr := range p.requests {
		require.Equal(t, cr.r.Name != "bytes", cr.needsJSON, "request %s", cr.r.Name)
	}
}
