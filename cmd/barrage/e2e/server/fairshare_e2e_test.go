package server_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/stretchr/testify/require"
)

// Bodies that cost memory to parse (600 KB of YAML aliases, a megabyte of JSON array), sent 16 at
// once by 8 users, leave serve's resident memory within 100 MiB of what it was (sampled from
// /proc while they are in flight), and every answer is small: 422 naming the problem, or 429 for
// a user's third at once. (They took it from 50 MiB to 3.3 GiB, with answers of 31 MB.)
func TestParsingCostsAreBoundedWhoeverSendsThem(t *testing.T) {
	t.Parallel()
	p := e2etest.StartServe(t, e2etest.ReachableDir(t), nil)
	admin := t.TempDir()
	e2etest.SignUpFirstAdmin(t, p, admin, "admin@example.com", "Admin")
	invite := strings.TrimSpace(e2etest.MustCLI(t, p, admin, "", "admin", "invite", "--template", "demo", "--uses", "8"))
	var tokens []string
	for i := range 8 {
		cfg := t.TempDir()
		e2etest.MustCLI(t, p, cfg, "user password 123\n", "signup", "--code", invite, "--email", fmt.Sprintf("u%d@example.com", i), "--name", "U")
		e2etest.MustCLI(t, p, cfg, "user password 123\n", "login", "--email", fmt.Sprintf("u%d@example.com", i))
		tokens = append(tokens, strings.TrimSpace(e2etest.MustCLI(t, p, cfg, "", "tokens", "create", "--name", "t", "--scopes", "read,write")))
	}

	var aliases strings.Builder
	aliases.WriteString("version: 1\nname: bomb\na: &a [1, 2, 3, 4, 5, 6, 7, 8]\nb:\n")
	for aliases.Len() < 600_000 {
		aliases.WriteString("  - *a\n")
	}
	array := "[" + strings.Repeat("1,", 500_000) + "1]"
	pid := p.Cmd.Process.Pid
	for name, body := range map[string]struct{ data, ct string }{"aliases": {aliases.String(), "application/yaml"}, "array": {array, "application/json"}} {
		stopWatching := e2etest.WatchRSS(t, pid)
		var wg sync.WaitGroup
		var mu sync.Mutex
		statuses := map[int]int{}
		largest := 0
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, err := http.NewRequest("POST", p.URL+"/v1/tests", bytes.NewReader([]byte(body.data)))
				if err != nil {
					return
				}
				req.Header.Set("Authorization", "Bearer "+tokens[i%8])
				req.Header.Set("Content-Type", body.ct)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					return
				}
				defer res.Body.Close()
				answer, _ := io.ReadAll(res.Body)
				mu.Lock()
				defer mu.Unlock()
				statuses[res.StatusCode]++
				largest = max(largest, len(answer))
			}()
		}
		wg.Wait()
		base, peak := stopWatching()
		t.Logf("%s: statuses %v, largest answer %d bytes, serve's RSS %d MiB, at most %d MiB while in flight", name, statuses, largest, base>>10, peak>>10)
		require.Equal(t, 16, statuses[http.StatusUnprocessableEntity]+statuses[http.StatusTooManyRequests], "%s: %v", name, statuses)
		require.Positive(t, statuses[http.StatusUnprocessableEntity], name)
		require.Less(t, largest, 64<<10, "%s: the answer stays small", name)
		require.Positive(t, peak, "%s: the memory was sampled", name)
		require.Less(t, peak-base, int64(100<<10), "%s: serve's memory grew by less than 100 MiB", name)
	}
}
