package script_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/script"
)

// parseErrors parses doc, which must be refused, and returns its errors.
func parseErrors(t *testing.T, doc string) script.ErrorList {
	t.Helper()
	s, err := script.Parse([]byte(doc), script.ParseOptions{})
	require.Error(t, err, "the script was accepted")
	require.Nil(t, s)
	var list script.ErrorList
	require.ErrorAs(t, err, &list)
	require.NotEmpty(t, list)
	return list
}

// mustParse parses doc, which must be accepted.
func mustParse(t *testing.T, doc string) *script.Script {
	t.Helper()
	s, err := script.Parse([]byte(doc), script.ParseOptions{})
	require.NoError(t, err)
	return s
}

// wrap puts a session's groups, written in flow style, into an otherwise valid script.
func wrap(groups string) string {
	return "version: 1\nbase_url: http://127.0.0.1:8080\nsession: {groups: " + groups + "}\nload: {vus: 1, iterations: 1}\n"
}

// withLoad is a valid script with the given load section.
func withLoad(load string) string {
	return "version: 1\nsession: {groups: [{name: g, requests: [{name: r, url: 'http://127.0.0.1/'}]}]}\nload: " + load + "\n"
}

// withTop is a valid script followed by more top-level sections.
func withTop(extra string) string {
	return wrap(`[{name: g, requests: [{name: r, url: /}]}]`) + extra
}

func TestParseErrorsNameTheirPath(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		doc  string
		path string // of the only error
		msg  string // contained in its message
	}{
		{"version missing", "session: {groups: [{name: g, requests: [{name: r, url: 'http://x/'}]}]}\nload: {vus: 1, iterations: 1}", "version", "required"},
		{"version 2", strings.Replace(wrap(`[{name: g, requests: [{name: r, url: /}]}]`), "version: 1", "version: 2", 1), "version", "must be 1"},
		{"unknown key with suggestion", withTop("treshold: []\n"), "treshold", `unknown key; did you mean "thresholds"?`},
		{"repeated key", withTop("name: a\nname: b\n"), "name", "repeated key"},
		{"not absolute", wrap(`[{name: a, requests: [{name: r, url: /}]}, {name: b, requests: [{name: s, url: "ftp://x/"}]}]`),
			"session.groups[1].requests[0].url", "must be an absolute http(s) URL or start with /"},
		{"relative without base", "version: 1\nsession: {groups: [{name: g, requests: [{name: r, url: /x}]}]}\nload: {vus: 1, iterations: 1}",
			"session.groups[0].requests[0].url", "no base_url"},
		{"url with a space", wrap(`[{name: g, requests: [{name: r, url: "/a b"}]}]`), "session.groups[0].requests[0].url", "must not contain spaces"},
		{"url without host", wrap(`[{name: g, requests: [{name: r, url: "http:///x"}]}]`), "session.groups[0].requests[0].url", "has no host"},
		{"base_url relative", strings.Replace(wrap(`[{name: g, requests: [{name: r, url: /}]}]`), "http://127.0.0.1:8080", "127.0.0.1:8080", 1), "base_url", "absolute http(s) URL"},
		{"base_url uses a data-less name", strings.Replace(wrap(`[{name: g, requests: [{name: r, url: /}]}]`), "http://127.0.0.1:8080", "http://${host}", 1), "base_url", "only constants and environment variables"},
		{"request name repeated", wrap(`[{name: g, requests: [{name: r, url: /}, {name: r, url: /}]}]`), "session.groups[0].requests[1].name", "already named"},
		{"group name repeated", wrap(`[{name: g, requests: [{name: r, url: /}]}, {name: g, requests: [{name: s, url: /}]}]`), "session.groups[1].name", "already named"},
		{"request name empty", wrap(`[{name: g, requests: [{name: " ", url: /}]}]`), "session.groups[0].requests[0].name", "must not be empty"},
		{"request name missing", wrap(`[{name: g, requests: [{url: /}]}]`), "session.groups[0].requests[0].name", "required"},
		{"no groups", wrap(`[]`), "session.groups", "at least one group"},
		{"no requests", wrap(`[{name: g, requests: []}]`), "session.groups[0].requests", "at least one request"},
		{"unknown request key", wrap(`[{name: g, requests: [{name: r, url: /, metod: POST}]}]`), "session.groups[0].requests[0].metod", `did you mean "method"?`},
		{"method", wrap(`[{name: g, requests: [{name: r, url: /, method: FETCH}]}]`), "session.groups[0].requests[0].method", "must be one of GET"},
		{"timeout without unit", wrap(`[{name: g, requests: [{name: r, url: /, timeout: 10}]}]`), "session.groups[0].requests[0].timeout", "must be a duration"},
		{"timeout negative", wrap(`[{name: g, requests: [{name: r, url: /, timeout: -1s}]}]`), "session.groups[0].requests[0].timeout", "must not be negative"},
		{"redirects", wrap(`[{name: g, requests: [{name: r, url: /, redirects: -1}]}]`), "session.groups[0].requests[0].redirects", "between 0 and 50"},
		{"http2 not a boolean", wrap(`[{name: g, requests: [{name: r, url: /, http2: "yes"}]}]`), "session.groups[0].requests[0].http2", "true or false"},
		{"header name", wrap(`[{name: g, requests: [{name: r, url: /, headers: {"Bad Name": x}}]}]`), `session.groups[0].requests[0].headers["Bad Name"]`, "not a valid header name"},
		{"header repeated in another case", wrap(`[{name: g, requests: [{name: r, url: /, headers: {Accept: a, accept: b}}]}]`), "session.groups[0].requests[0].headers.accept", "repeats header Accept"},
		{"unterminated template", wrap(`[{name: g, requests: [{name: r, url: /, headers: {X-A: "${a"}}]}]`), "session.groups[0].requests[0].headers.X-A", "unterminated ${"},
		{"bad variable name", wrap(`[{name: g, requests: [{name: r, url: "/${a-b}"}]}]`), "session.groups[0].requests[0].url", "invalid variable name"},
		{"undefined variable", wrap(`[{name: g, requests: [{name: r, url: /, headers: {X-A: "${nope}"}}]}]`), "session.groups[0].requests[0].headers.X-A", "${nope} is not defined"},
		{"used before extracted", wrap(`[{name: g, requests: [{name: a, url: "/${id}"}, {name: b, url: /, extract: [{var: id, header: X-Id}]}]}]`),
			"session.groups[0].requests[0].url", `${id} is not set yet: it is first extracted by request "b"`},
		{"extracted by its own request", wrap(`[{name: g, requests: [{name: a, url: "/${id}", extract: [{var: id, header: X-Id}]}]}]`),
			"session.groups[0].requests[0].url", "${id} is not set yet"},
		{"session header uses an extracted variable", "version: 1\nbase_url: http://h\nsession: {headers: {Authorization: 'Bearer ${tok}'}, groups: [{name: g, requests: [{name: a, url: /, extract: [{var: tok, json: $.token}]}, {name: b, url: /}]}]}\nload: {vus: 1, iterations: 1}",
			"session.headers.Authorization", "${tok} is not set yet"},
		{"extractor kind missing", wrap(`[{name: g, requests: [{name: r, url: /, extract: [{var: x}]}]}]`), "session.groups[0].requests[0].extract[0]", "an extractor needs one of json, regex, header, cookie"},
		{"extractor two kinds", wrap(`[{name: g, requests: [{name: r, url: /, extract: [{var: x, header: A, cookie: b}]}]}]`), "session.groups[0].requests[0].extract[0]", "not header and cookie"},
		{"extractor var name", wrap(`[{name: g, requests: [{name: r, url: /, extract: [{var: 1x, header: A}]}]}]`), "session.groups[0].requests[0].extract[0].var", "not a valid name"},
		{"regex", wrap(`[{name: g, requests: [{name: r, url: /, extract: [{var: x, regex: "a("}]}]}]`), "session.groups[0].requests[0].extract[0].regex", "missing closing )"},
		{"json path", wrap(`[{name: g, requests: [{name: r, url: /, extract: [{var: x, json: "$..a"}]}]}]`), "session.groups[0].requests[0].extract[0].json", "recursive descent"},
		{"json path filter", wrap(`[{name: g, requests: [{name: r, url: /, assert: [{json: "$.a[?(@.b)]"}]}]}]`), "session.groups[0].requests[0].assert[0].json", "filters and slices are not supported"},
		{"status out of range", wrap(`[{name: g, requests: [{name: r, url: /, assert: [{status: 99}]}]}]`), "session.groups[0].requests[0].assert[0].status", "between 100 and 599"},
		{"status class", wrap(`[{name: g, requests: [{name: r, url: /, assert: [{status: [200, 6xx]}]}]}]`), "session.groups[0].requests[0].assert[0].status[1]", "status code such as 200"},
		{"empty check name", wrap(`[{name: g, requests: [{name: r, url: /, assert: [{name: " ", status: 200}]}]}]`), "session.groups[0].requests[0].assert[0].name", "must not be empty"},
		{"check name alone", wrap(`[{name: g, requests: [{name: r, url: /, assert: [{name: ok}]}]}]`), "session.groups[0].requests[0].assert[0]", "an assertion needs one of"},
		{"check twice", wrap(`[{name: g, requests: [{name: r, url: /, assert: [{status: 200}, {status: 200}]}]}]`), "session.groups[0].requests[0].assert[1]", `checks what another assertion of this request checks, as "status 200"`},
		{"check name twice", wrap(`[{name: g, requests: [{name: r, url: /, assert: [{name: same, status: 200}, {name: same, json: $.a}]}]}]`), "session.groups[0].requests[0].assert[1]", "give one a name:"},
		{"bidi in a name", wrap("[{name: g, requests: [{name: \"r\\u202e\", url: /}]}]"), "session.groups[0].requests[0].name", "nor bidirectional ones"},
		{"nul in a monitor series", withTop("monitors: [{name: m, url: 'http://127.0.0.1:9/metrics', series: [\"up{a=\\\"x\\u0000y\\\"}\"]}]\n"), "monitors[0].series[0]", "must not contain control characters"},
		{"equals without json", wrap(`[{name: g, requests: [{name: r, url: /, assert: [{status: 200, equals: 1}]}]}]`), "session.groups[0].requests[0].assert[0].equals", "goes only with json"},
		{"equals and exists", wrap(`[{name: g, requests: [{name: r, url: /, assert: [{json: $.a, equals: 1, exists: true}]}]}]`), "session.groups[0].requests[0].assert[0].exists", "goes without equals"},
		{"assertion kind missing", wrap(`[{name: g, requests: [{name: r, url: /, assert: [{}]}]}]`), "session.groups[0].requests[0].assert[0]", "an assertion needs one of"},
		{"max_duration", wrap(`[{name: g, requests: [{name: r, url: /, assert: [{max_duration: fast}]}]}]`), "session.groups[0].requests[0].assert[0].max_duration", "must be a duration"},
		{"uniform reversed", wrap(`[{name: g, think: {uniform: [3s, 1s]}, requests: [{name: r, url: /}]}]`), "session.groups[0].think.uniform", "shortest pause comes first"},
		{"uniform one value", wrap(`[{name: g, requests: [{name: r, url: /, think: {uniform: [3s]}}]}]`), "session.groups[0].requests[0].think.uniform", "[shortest, longest]"},
		{"gaussian without stddev", wrap(`[{name: g, requests: [{name: r, url: /, think: {gaussian: {mean: 1s}}}]}]`), "session.groups[0].requests[0].think.gaussian.stddev", "required"},
		{"think two kinds", wrap(`[{name: g, requests: [{name: r, url: /, think: {fixed: 1s, uniform: [1s, 2s]}}]}]`), "session.groups[0].requests[0].think", "a think time takes only one of fixed, uniform, gaussian"},
		{"body two kinds", wrap(`[{name: g, requests: [{name: r, method: POST, url: /, body: {raw: a, form: {b: c}}}]}]`), "session.groups[0].requests[0].body", "a body takes only one of json, form, raw"},
		{"body content type", wrap(`[{name: g, requests: [{name: r, method: POST, url: /, body: {raw: a, content_type: "no type"}}]}]`), "session.groups[0].requests[0].body.content_type", "not a media type"},
		{"json body infinity", wrap(`[{name: g, requests: [{name: r, method: POST, url: /, body: {json: {a: [1, .inf]}}}]}]`), "session.groups[0].requests[0].body.json.a[1]", "not a number JSON can hold"},
		{"cookies not a boolean", "version: 1\nsession: {cookies: 1, groups: [{name: g, requests: [{name: r, url: 'http://h/'}]}]}\nload: {vus: 1, iterations: 1}", "session.cookies", "true or false"},
		{"load missing", "version: 1\nsession: {groups: [{name: g, requests: [{name: r, url: 'http://h/'}]}]}", "load", "required"},
		{"load mixed models", withLoad("{vus: 5, rate: 10/s, duration: 1m, max_vus: 10}"), "load", "mixes the closed model"},
		{"load no model", withLoad("{duration: 1m}"), "load", "needs vus (closed model) or rate or stages (open model)"},
		{"closed without end", withLoad("{vus: 5, ramp_up: 10s}"), "load", "needs duration, iterations or both"},
		{"closed zero vus", withLoad("{vus: 0, duration: 1m}"), "load.vus", "between 1 and 1000000"},
		{"ramp_up too long", withLoad("{vus: 5, ramp_up: 2m, duration: 1m}"), "load.ramp_up", "longer than duration"},
		{"open rate without duration", withLoad("{rate: 10/s, max_vus: 10}"), "load.duration", "required with rate"},
		{"open without max_vus", withLoad("{rate: 10/s, duration: 1m}"), "load.max_vus", "required"},
		{"open rate unit", withLoad("{rate: 10, duration: 1m, max_vus: 5}"), "load.rate", "must be a string"},
		{"open rate text", withLoad("{rate: 10/day, duration: 1m, max_vus: 5}"), "load.rate", "must be a rate such as 200/s"},
		{"open rate negative", withLoad("{rate: -10/s, duration: 1m, max_vus: 5}"), "load.rate", "must not be negative"},
		{"open rate too high", withLoad("{rate: 2e9/s, duration: 1m, max_vus: 5}"), "load.rate", "must be at most 1000000000/s"},
		{"stages with duration", withLoad("{stages: [{rate: 1/s, duration: 1m}], duration: 1m, max_vus: 5}"), "load.duration", "goes without stages"},
		{"stage rate and ramp_to", withLoad("{stages: [{rate: 1/s, duration: 1m}, {rate: 1/s, ramp_to: 5/s, duration: 1m}], max_vus: 5}"), "load.stages[1]", "a stage takes only one of rate, ramp_to"},
		{"stage without duration", withLoad("{stages: [{ramp_to: 5/s}], max_vus: 5}"), "load.stages[0].duration", "required"},
		{"source address", withLoad("{vus: 1, iterations: 1, source_addresses: [127.0.0.2, 10.0.0.300]}"), "load.source_addresses[1]", `"10.0.0.300" is not an IP address`},
		{"source range families", withLoad("{vus: 1, iterations: 1, source_addresses: '127.0.0.2-::5'}"), "load.source_addresses", "mixes address families"},
		{"source range reversed", withLoad("{vus: 1, iterations: 1, source_addresses: '127.0.0.9-127.0.0.2'}"), "load.source_addresses", "ends before it starts"},
		{"source range too big", withLoad("{vus: 1, iterations: 1, source_addresses: '10.0.0.0-10.1.0.0'}"), "load.source_addresses", "more than 4096 source addresses"},
		{"source address repeated", withLoad("{vus: 1, iterations: 1, source_addresses: [127.0.0.2-127.0.0.4, 127.0.0.3]}"), "load.source_addresses[1]", "repeats address 127.0.0.3"},
		{"source address multicast", withLoad("{vus: 1, iterations: 1, source_addresses: 224.0.0.1}"), "load.source_addresses", "not a unicast address"},
		{"threshold metric", withTop("thresholds: [p96 < 1s]\n"), "thresholds[0]", `unknown metric "p96"`},
		{"threshold syntax", withTop("thresholds: ['p95 300ms']\n"), "thresholds[0]", "must read"},
		{"threshold latency unit", withTop("thresholds: ['p95 < 300']\n"), "thresholds[0]", "must be a duration"},
		{"threshold error rate", withTop("thresholds: ['error_rate < 150%']\n"), "thresholds[0]", "between 0% and 100%"},
		{"threshold window", withTop("thresholds: ['rps > 5 over 10ms']\n"), "thresholds[0]", "at least 1s"},
		{"threshold request", withTop("thresholds: [{check: 'p95 < 1s', request: home}]\n"), "thresholds[0].request", `no request is named "home"`},
		{"threshold window twice", withTop("thresholds: [{check: 'p95 < 1s over 10s', over: 30s}]\n"), "thresholds[0].over", "already says over 10s"},
		{"threshold abort", withTop("thresholds: [{check: 'p95 < 1s', abort: yes}]\n"), "thresholds[0].abort", "true or false"},
		{"plugin ref", withTop("plugins: [{use: 'random-data@>=1.2', kind: element}]\n"), "plugins[0].use", "exact version"},
		{"plugin namespace", withTop("plugins: [{use: 'acme/random_data@1.0.0', as: r, kind: element}]\n"), "plugins[0].use", "a namespaced name is a marketplace plugin's"},
		{"plugin range", withTop("plugins: [{use: 'rnd@^1.2.3-rc.1', kind: element}]\n"), "plugins[0].use", "or a range of versions"},
		{"plugin kind", withTop("plugins: [{use: rnd@1.2.0, kind: session}]\n"), "plugins[0].kind", "must be session-element"},
		{"plugin kind missing", withTop("plugins: [{use: rnd@1.2.0}]\n"), "plugins[0].kind", "required"},
		{"plugin scope", withTop("plugins: [{use: rnd@1.2.0, kind: element, scope: forever}]\n"), "plugins[0].scope", "run, vu or iteration"},
		{"plugin alias needed", withTop("plugins: [{use: random-data@1.2.0, kind: element}]\n"), "plugins[0].as", "required"},
		{"plugin alias repeated", withTop("plugins: [{use: a@1.0.0, kind: element}, {use: b@1.0.0, as: a, kind: url}]\n"), "plugins[1]", `already named "a"`},
		{"plugin config", withTop("plugins: [{use: a@1.0.0, kind: element, config: [1]}]\n"), "plugins[0].config", "must be a mapping"},
		{"plugin network not a list", withTop("plugins: [{use: a@1.0.0, kind: element, network: 'db:5432'}]\n"), "plugins[0].network", "must be a list"},
		{"plugin network without port", withTop("plugins: [{use: a@1.0.0, kind: element, network: [db.example]}]\n"), "plugins[0].network[0]", "want host:port"},
		{"plugin network bad port", withTop("plugins: [{use: a@1.0.0, kind: element, network: ['db:70000']}]\n"), "plugins[0].network[0]", "from 1 to 65535"},
		{"plugin network every host", withTop("plugins: [{use: a@1.0.0, kind: element, network: ['db:5432', '*:5432']}]\n"), "plugins[0].network[1]", "grants every host"},
		{"plugin network repeated", withTop("plugins: [{use: a@1.0.0, kind: element, network: ['DB:5432', 'db:5432']}]\n"), "plugins[0].network[1]", "repeats db:5432"},
		{"plugin network number", withTop("plugins: [{use: a@1.0.0, kind: element, network: [5432]}]\n"), "plugins[0].network[0]", "must be a string"},
		{"request plugin unknown", "version: 1\nsession: {groups: [{name: g, requests: [{name: r, url: 'http://h/', plugins: [sign]}]}]}\nload: {vus: 1, iterations: 1}",
			"session.groups[0].requests[0].plugins[0]", `no plugin is named "sign"`},
		{"request plugin is an element", "version: 1\nplugins: [{use: rnd@1.0.0, kind: element}]\nsession: {groups: [{name: g, requests: [{name: r, url: 'http://h/', plugins: [rnd]}]}]}\nload: {vus: 1, iterations: 1}",
			"session.groups[0].requests[0].plugins[0]", "only url plugins"},
		{"plugin variable of unknown plugin", wrap(`[{name: g, requests: [{name: r, url: "/${rnd.email}"}]}]`), "session.groups[0].requests[0].url", "no plugin is named rnd"},
		{"plugin variable of a source plugin", "version: 1\nplugins: [{use: inject@1.0.0, kind: source}]\nsession: {groups: [{name: g, requests: [{name: r, url: 'http://h/${inject.x}'}]}]}\nload: {vus: 1, iterations: 1}",
			"session.groups[0].requests[0].url", "is a source plugin and produces no variables"},
		{"request plugin is a source", "version: 1\nplugins: [{use: inject@1.0.0, kind: source}]\nsession: {groups: [{name: g, requests: [{name: r, url: 'http://h/', plugins: [inject]}]}]}\nload: {vus: 1, iterations: 1}",
			"session.groups[0].requests[0].plugins[0]", "plugin \"inject\" is a source-modifier plugin; only url plugins"},
		{"data file outside", withTop("variables: {data: [{file: ../users.csv}]}\n"), "variables.data[0].file", "inside it"},
		{"data order", withTop("variables: {data: [{file: users.csv, order: shuffled}]}\n"), "variables.data[0].order", "sequential, random or circular"},
		{"data separator", withTop("variables: {data: [{file: users.csv, separator: ';;'}]}\n"), "variables.data[0].separator", "one character"},
		{"env name", withTop("variables: {env: {token: 'SHOP-TOKEN'}}\n"), "variables.env.token", "not an environment variable name"},
		{"env without from", withTop("variables: {env: {token: {default: x}}}\n"), "variables.env.token.from", "required"},
		{"constant name", withTop("variables: {constants: {'user agent': x}}\n"), `variables.constants["user agent"]`, "not a valid variable name"},
		{"constant is a list", withTop("variables: {constants: {a: [1]}}\n"), "variables.constants.a", "must be a string, number or boolean"},
		{"constant and env clash", withTop("variables: {constants: {token: x}, env: {token: TOKEN}}\n"), "variables.env.token", "token is already a constant"},
		{"root is a list", "[1, 2]", "", "must be a mapping, not a list"},
		{"empty", "", "", "the script is empty"},
		{"alias", withTop("x: &a 1\n"), "", "anchors (&a) are not supported"},
		{"two documents", withTop("---\nversion: 1\n"), "", "a script is one document"},
		{"monitor url", withTop("monitors: [{name: n, url: '127.0.0.1:9100/metrics', series: [up]}]\n"), "monitors[0].url", "absolute http(s) URL"},
		{"monitor url with credentials", withTop("monitors: [{name: n, url: 'http://u:p@127.0.0.1:9100/', series: [up]}]\n"), "monitors[0].url", "without credentials"},
		{"monitor without series", withTop("monitors: [{name: n, url: 'http://127.0.0.1:9100/', series: []}]\n"), "monitors[0].series", "from 1 to 16 series"},
		{"monitor series selector", withTop("monitors: [{name: n, url: 'http://127.0.0.1:9100/', series: ['rate(x[1m])']}]\n"), "monitors[0].series[0]", "want a metric name"},
		{"monitor series matcher", withTop("monitors: [{name: n, url: 'http://127.0.0.1:9100/', series: ['x{mode=~\"io.*\"}']}]\n"), "monitors[0].series[0]", "only equality"},
		{"monitor series unclosed", withTop("monitors: [{name: n, url: 'http://127.0.0.1:9100/', series: ['x{mode=\"io']}]\n"), "monitors[0].series[0]", "end with }"},
		{"monitor name repeated", withTop("monitors: [{name: n, url: 'http://127.0.0.1:9100/', series: [up]}, {name: n, url: 'http://127.0.0.1:9101/', series: [up]}]\n"), "monitors[1].name", "already named"},
		{"monitor port", withTop("monitors: [{name: n, url: 'http://127.0.0.1:99999/m', series: [up]}]\n"), "monitors[0].url", "absolute http(s) URL"},
		{"monitor series twice", withTop("monitors: [{name: n, url: 'http://127.0.0.1:9100/', series: [up, up]}]\n"), "monitors[0].series[1]", "named twice"},
		{"monitor key", withTop("monitors: [{name: n, url: 'http://127.0.0.1:9100/', series: [up], every: 1s}]\n"), "monitors[0].every", "unknown key"},
		{"vu stages with vus", strings.Replace(wrap(`[{name: g, requests: [{name: r, url: /}]}]`), "load: {vus: 1, iterations: 1}", "load: {vus: 3, stages: [{ramp_to: 5, duration: 1m}]}", 1), "load", "go without vus"},
		{"vu stages of nothing", strings.Replace(wrap(`[{name: g, requests: [{name: r, url: /}]}]`), "load: {vus: 1, iterations: 1}", "load: {stages: [{vus: 0, duration: 1m}]}", 1), "load.stages", "never runs a VU"},
		{"vu stage as a rate", strings.Replace(wrap(`[{name: g, requests: [{name: r, url: /}]}]`), "load: {vus: 1, iterations: 1}", "load: {stages: [{vus: 2, duration: 1m}, {ramp_to: 5/s, duration: 1m}]}", 1), "load.stages[1].ramp_to", "must be"},
		{"batch uses a sibling's extraction", wrap(`[{name: g, requests: [{batch: [{name: a, url: /, extract: [{var: v, regex: x}]}, {name: b, url: "/${v}"}]}]}]`), "session.groups[0].requests[0].batch[1].url", "comes later"},
		{"batch of one", wrap(`[{name: g, requests: [{batch: [{name: a, url: /}]}]}]`), "session.groups[0].requests[0].batch", "from 2 to 50"},
		{"scenarios beside a session", "version: 1\nsession: {groups: [{name: g, requests: [{name: r, url: 'http://x/'}]}]}\nscenarios: {a: {session: {groups: [{name: h, requests: [{name: s, url: 'http://x/'}]}]}, load: {vus: 1, iterations: 1}}}\n", "session", "goes without scenarios"},
		{"scenarios share names", "version: 1\nscenarios: {a: {session: {groups: [{name: g, requests: [{name: r, url: 'http://x/'}]}]}, load: {vus: 1, iterations: 1}}, b: {session: {groups: [{name: h, requests: [{name: r, url: 'http://x/'}]}]}, load: {vus: 1, iterations: 1}}}\n", "scenarios.b.session.groups[0].requests[0].name", "already named"},
		{"open model without a rate", strings.Replace(wrap(`[{name: g, requests: [{name: r, url: /}]}]`), "load: {vus: 1, iterations: 1}", "load: {max_vus: 10}", 1), "load", "needs rate and duration, or stages"},
		{"websocket with a body", wrap(`[{name: g, requests: [{name: c, url: "ws://x/", body: {raw: a}, websocket: [{send: hi}]}]}]`), "session.groups[0].requests[0].body", "takes no body"},
		{"websocket step of two kinds", wrap(`[{name: g, requests: [{name: c, url: "ws://x/", websocket: [{send: hi, receive: r}]}]}]`), "session.groups[0].requests[0].websocket[0]", "takes only one of send, receive"},
		{"websocket receive header", wrap(`[{name: g, requests: [{name: c, url: "ws://x/", websocket: [{receive: r, extract: [{var: v, header: X}]}]}]}]`), "session.groups[0].requests[0].websocket[0].extract[0]", "no headers"},
		{"websocket label taken", wrap(`[{name: g, requests: [{name: c, url: "wss://x/", websocket: [{receive: r}]}, {name: r, url: /}]}]`), "session.groups[0].requests[1].name", "already named"},
		{"websocket send options", wrap(`[{name: g, requests: [{name: c, url: "ws://x/", websocket: [{send: hi, timeout: 1s}]}]}]`), "session.groups[0].requests[0].websocket[0].timeout", "belongs to a receive"},
		{"multipart content type", wrap(`[{name: g, requests: [{name: u, method: POST, url: /, body: {multipart: {a: b}, content_type: text/plain}}]}]`), "session.groups[0].requests[0].body", "sets its own content_type"},
		{"multipart file outside", wrap(`[{name: g, requests: [{name: u, method: POST, url: /, body: {multipart: {a: {file: ../x}}}}]}]`), "session.groups[0].requests[0].body.multipart.a.file", "inside it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			list := parseErrors(t, tc.doc)
			var paths []string
			for _, e := range list {
				paths = append(paths, e.Error())
			}
			require.Len(t, list, 1, "errors:\n%s", strings.Join(paths, "\n"))
			require.Equal(t, tc.path, list[0].Path)
			require.Contains(t, list[0].Message, tc.msg)
			require.ErrorIs(t, list, barrage.ErrInvalid)
		})
	}
}

func TestExtractorMayNotReplaceAVariable(t *testing.T) {
	t.Parallel()
	doc := "version: 1\nbase_url: http://h\nvariables: {constants: {id: x}}\n" +
		"session: {groups: [{name: g, requests: [{name: r, url: /, extract: [{var: id, header: X-Id}]}]}]}\nload: {vus: 1, iterations: 1}\n"
	list := parseErrors(t, doc)
	require.Len(t, list, 1)
	require.Equal(t, "session.groups[0].requests[0].extract[0].var", list[0].Path)
	require.Equal(t, "id is already a constant; extract into another name", list[0].Message)
}

func TestParseReportsEveryErrorWithItsLine(t *testing.T) {
	t.Parallel()
	doc := `version: 1
session:
  groups:
    - name: home
      requests:
        - name: get home
          url: /
    - name: cart
      requests:
        - name: add
          url: ftp://shop/cart
          timeout: soon
load:
  vus: 0
  duration: 1m
thresholds:
  - p95 < 300
`
	s, err := script.Parse([]byte(doc), script.ParseOptions{Filename: "shop.yaml"})
	require.Nil(t, s)
	require.Equal(t, `shop.yaml:7: session.groups[0].requests[0].url: starts with / but the script has no base_url
shop.yaml:11: session.groups[1].requests[0].url: must be an absolute http(s) URL or start with /
shop.yaml:12: session.groups[1].requests[0].timeout: must be a duration such as 500ms, 2s or 1m30s
shop.yaml:14: load.vus: must be between 1 and 1000000
shop.yaml:17: thresholds[0]: p95: value "300": must be a duration such as 500ms, 2s or 1m30s`, err.Error())

	var list script.ErrorList
	require.ErrorAs(t, err, &list)
	require.Equal(t, 11, list[1].Line)
	require.Equal(t, 16, list[1].Column)

	var inv *barrage.InvalidError
	require.ErrorAs(t, err, &inv)
	require.Len(t, inv.Fields, 5)
	require.Equal(t, barrage.FieldError{Field: "load.vus", Reason: "must be between 1 and 1000000 (line 14)", Line: 14}, inv.Fields[3])
}

func TestYAMLSyntaxErrorHasItsLine(t *testing.T) {
	t.Parallel()
	list := parseErrors(t, "version: 1\nsession:\n  groups: [\n    {name: a\nload: {}\n")
	require.Len(t, list, 1)
	require.Positive(t, list[0].Line)
	require.Contains(t, list[0].Message, "invalid YAML")
}

func TestJSONErrorsHaveLines(t *testing.T) {
	t.Parallel()
	doc := "{\n\t\"version\": 1,\n\t\"session\": {\"groups\": [{\"name\": \"g\", \"requests\": [\n\t\t{\"name\": \"r\", \"url\": \"ftp://x\"}\n\t]}]},\n\t\"load\": {\"vus\": 1, \"iterations\": 1}\n}\n"
	list := parseErrors(t, doc)
	require.Len(t, list, 1)
	require.Equal(t, "session.groups[0].requests[0].url", list[0].Path)
	require.Equal(t, 4, list[0].Line)
	require.Equal(t, 24, list[0].Column)

	list = parseErrors(t, `{"version": 1, "version": 1, "session": {"groups": []}, "load": {"vus": 1, "iterations": 1}}`)
	require.Equal(t, "version", list[0].Path)
	require.Equal(t, "repeated key", list[0].Message)
}

// A monitor's selectors keep their metric and label values, escapes read.
func TestParseReadsMonitors(t *testing.T) {
	t.Parallel()
	s := mustParse(t, withTop(`monitors:
  - name: node
    url: http://127.0.0.1:9100/metrics
    series:
      - 'node_cpu_seconds_total{mode="iowait", cpu="0"}'
      - node_load1
      - 'x{path="a\"b"}'
`))
	require.Len(t, s.Monitors, 1)
	m := s.Monitors[0]
	require.Equal(t, "node", m.Name)
	require.Equal(t, "http://127.0.0.1:9100/metrics", m.URL)
	require.Len(t, m.Series, 3)
	require.Equal(t, "node_cpu_seconds_total", m.Series[0].Metric)
	require.Equal(t, map[string]string{"mode": "iowait", "cpu": "0"}, m.Series[0].Labels)
	require.Empty(t, m.Series[1].Labels)
	require.Equal(t, map[string]string{"path": `a"b`}, m.Series[2].Labels)
}

func TestParseFillsDefaults(t *testing.T) {
	t.Parallel()
	s := mustParse(t, wrap(`[{name: g, requests: [{name: r, url: /}]}]`))
	require.Equal(t, 1, s.Version)
	require.True(t, s.Session.Cookies)
	r := s.Session.Groups[0].Requests[0]
	require.Equal(t, "GET", r.Method)
	require.Equal(t, "g", r.Group)
	require.Equal(t, 30*time.Second, r.Timeout)
	require.Zero(t, r.Redirects)
	require.False(t, r.HTTP2)
	require.Nil(t, r.Body)
	require.Nil(t, r.Think)
	require.Len(t, r.Assert, 1)
	require.Equal(t, &script.Assertion{Kind: script.AssertStatus, Status: []script.StatusRange{{Min: 200, Max: 399}}, Implied: true}, r.Assert[0])
	u, ok := r.URL.Literal()
	require.True(t, ok)
	require.Equal(t, "http://127.0.0.1:8080/", u)
	require.Equal(t, script.Closed, s.Load.Model)
	require.Equal(t, 30*time.Second, s.Load.GracefulStop)
}

func TestParseBuildsTheModel(t *testing.T) {
	t.Parallel()
	doc := `version: 1
name: model
base_url: http://127.0.0.1:8080/api/
variables:
  constants: { ua: demo, n: 5 }
  env: { token: TOKEN, region: { from: REGION, default: eu } }
  data: [ { file: data/users.csv, order: sequential, separator: ";" } ]
plugins:
  - { use: random-data@1.2.0-rc.1, as: rnd, kind: element, scope: iteration, config: { n: 3, email: { syntax: email } } }
  - { use: acme/sign@0.3.1, as: sign, kind: url, network: [ "api.example.com:443", "*.Example.org:443", "10.0.0.5:5432" ] }
session:
  cookies: false
  headers: { User-Agent: "${ua}", Accept: "*/*" }
  groups:
    - name: first
      headers: { Accept: application/json }
      think: 2s
      requests:
        - name: login
          method: post
          url: /login?from=x
          query: { tag: [a, "b c"], lang: en }
          headers: { accept: text/html }
          body: { form: { user: "${email}", pw: "p&w" } }
          redirects: 3
          http2: true
          timeout: 1500ms
          plugins: [ sign ]
          extract:
            - { var: tok, json: "$.data['token']", default: none }
            - { var: loc, header: Location }
          assert:
            - { status: [200, 3xx] }
            - { body_contains: "hi ${email}" }
            - { json: $.ok, equals: true }
            - { json: $.user, equals: "${tok}" }
            - { json: $.gone, exists: false }
            - { max_duration: 1s }
          think: { gaussian: { mean: 1s, stddev: 100ms } }
        - name: next
          url: ${loc}
          body: { raw: "token=${tok}", content_type: text/plain }
load:
  stages: [ { ramp_to: 60/m, duration: 30s }, { rate: 2/s, duration: 1m } ]
  max_vus: 20
  graceful_stop: 0
  source_addresses: [ "127.0.0.2-127.0.0.4", "::1" ]
thresholds:
  - p99.9 <= 2s
  - { check: "error_rate < 0.5%", over: 1m, abort: true, request: login }
`
	s := mustParse(t, doc)
	require.Equal(t, "model", s.Name)
	require.Equal(t, []script.Constant{{Name: "ua", Value: "demo"}, {Name: "n", Value: "5"}}, s.Variables.Constants)
	require.Len(t, s.Variables.Env, 2)
	require.Equal(t, "REGION", s.Variables.Env[1].From)
	require.True(t, s.Variables.Env[1].HasDefault)
	require.Equal(t, "data/users.csv", s.Variables.Data[0].File)
	require.Equal(t, script.Sequential, s.Variables.Data[0].Order)
	require.Equal(t, ';', s.Variables.Data[0].Separator)
	require.Nil(t, s.Variables.Data[0].Columns, "Parse reads no data file")

	require.Len(t, s.Plugins, 2)
	rnd := s.Plugins[0]
	require.Equal(t, "random-data", rnd.Name)
	require.Equal(t, "1.2.0-rc.1", rnd.Version)
	require.Equal(t, "rnd", rnd.As)
	require.Equal(t, script.ScopeIteration, rnd.Scope)
	require.Equal(t, map[string]any{"n": jsonNumber("3"), "email": map[string]any{"syntax": "email"}}, rnd.Config)
	require.Equal(t, script.URLPlugin, s.Plugins[1].Kind)
	require.Equal(t, script.Scope(0), s.Plugins[1].Scope, "no scope: the plugin's own")
	require.Empty(t, rnd.Network, "no network unless granted")
	var grants []string
	for _, g := range s.Plugins[1].Network {
		grants = append(grants, fmt.Sprintf("%s at %s line %d", g.Host, g.Path, g.Line))
	}
	require.Equal(t, []string{"api.example.com:443 at plugins[1].network[0] line 10", "*.example.org:443 at plugins[1].network[1] line 10",
		"10.0.0.5:5432 at plugins[1].network[2] line 10"}, grants)

	require.False(t, s.Session.Cookies)
	g := s.Session.Groups[0]
	require.Equal(t, &script.Think{Kind: script.ThinkFixed, Fixed: 2 * time.Second}, g.Think)
	login := g.Requests[0]
	require.Equal(t, "POST", login.Method)
	var headers []string
	for _, h := range login.Headers {
		headers = append(headers, h.Name+": "+h.Value.String())
	}
	require.Equal(t, []string{"accept: text/html", "User-Agent: ${ua}"}, headers, "the request's Accept overrides the group's and the session's")
	require.Equal(t, 3, login.Redirects)
	require.True(t, login.HTTP2)
	require.Equal(t, 1500*time.Millisecond, login.Timeout)
	require.Equal(t, []*script.Plugin{s.Plugins[1]}, login.Plugins)
	require.Equal(t, &script.Think{Kind: script.ThinkGaussian, Mean: time.Second, StdDev: 100 * time.Millisecond}, login.Think)

	vars := map[string]string{"email": "a+b@x.test", "tok": `t"1`, "loc": "http://h/next", "ua": "demo"}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	u, err := login.AppendURL(lookup, nil)
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:8080/api/login?from=x&tag=a&tag=b+c&lang=en", string(u))
	require.Equal(t, script.FormBody, login.Body.Kind)
	require.Equal(t, "application/x-www-form-urlencoded", login.Body.ContentType)
	body, err := login.Body.Content.Render(lookup, nil)
	require.NoError(t, err)
	require.Equal(t, "user=a%2Bb%40x.test&pw=p%26w", string(body))

	require.Len(t, login.Extract, 2)
	require.Equal(t, script.ExtractJSON, login.Extract[0].Kind)
	require.Equal(t, "none", login.Extract[0].Default)
	require.True(t, login.Extract[0].HasDefault)
	require.Equal(t, script.ExtractHeader, login.Extract[1].Kind)
	require.Equal(t, "Location", login.Extract[1].Name)

	require.Len(t, login.Assert, 6, "no implied status assertion when one is given")
	require.Equal(t, []script.StatusRange{{Min: 200, Max: 200}, {Min: 300, Max: 399}}, login.Assert[0].Status)
	require.True(t, login.Assert[0].StatusOK(302))
	require.False(t, login.Assert[0].StatusOK(201))
	require.Equal(t, []string{"email"}, login.Assert[1].Text.Vars())
	require.Equal(t, true, login.Assert[2].Equals)
	doc2, err := script.ReadJSON([]byte(`{"ok": true, "user": "t\"1"}`))
	require.NoError(t, err)
	for i, want := range []bool{true, true, true} {
		ok, err := login.Assert[2+i].JSONHolds(doc2, lookup)
		require.NoError(t, err)
		require.Equal(t, want, ok, "assertion %d", 2+i)
	}
	require.Equal(t, time.Second, login.Assert[5].MaxDuration)

	next := g.Requests[1]
	u, err = next.AppendURL(lookup, nil)
	require.NoError(t, err)
	require.Equal(t, "http://h/next", string(u))
	require.Equal(t, script.RawBody, next.Body.Kind)
	require.Equal(t, "text/plain", next.Body.ContentType)
	require.Nil(t, next.Think)

	require.Equal(t, script.Open, s.Load.Model)
	require.Equal(t, []script.Stage{{From: 0, To: 1, Duration: 30 * time.Second}, {From: 2, To: 2, Duration: time.Minute}}, s.Load.Stages)
	require.Equal(t, 90*time.Second, s.Load.Duration)
	require.Equal(t, 20, s.Load.MaxVUs)
	require.Zero(t, s.Load.GracefulStop)
	require.Equal(t, []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("127.0.0.4"), netip.MustParseAddr("::1")}, s.Load.SourceAddrs)

	require.Len(t, s.Thresholds, 2)
	require.Equal(t, script.P999, s.Thresholds[0].Metric)
	require.Equal(t, script.LessEqual, s.Thresholds[0].Op)
	require.Equal(t, &script.Threshold{Source: "error_rate < 0.5%", Metric: script.ErrorRate, Op: script.Less, Value: 0.005, Window: time.Minute, Abort: true, Request: "login"}, s.Thresholds[1])
}

func TestJSONBodyEscapesVariables(t *testing.T) {
	t.Parallel()
	doc := wrap(`[{name: g, requests: [{name: r, method: PUT, url: /, body: {json: {"a\"b": "${x} and $${x}", n: [1, 2.5, 0x10, 1e3, null, true], o: {}}}}]}]`)
	s := mustParse(t, strings.Replace(doc, "session:", "variables: {constants: {x: v}}\nsession:", 1))
	b := s.Session.Groups[0].Requests[0].Body
	require.Equal(t, script.JSONBody, b.Kind)
	require.Equal(t, "application/json", b.ContentType)
	out, err := b.Content.Render(func(string) (string, bool) { return "q\"\\\n\x01é", true }, nil)
	require.NoError(t, err)
	require.JSONEq(t, `{"a\"b":"q\"\\\n\u0001é and ${x}","n":[1,2.5,16,1e3,null,true],"o":{}}`, string(out))
}

func TestResolveEnv(t *testing.T) {
	t.Parallel()
	s := mustParse(t, withTop("variables: {env: {token: TOKEN, region: {from: REGION, default: eu}, key: KEY}}\n"))
	vals, err := s.ResolveEnv(func(k string) (string, bool) {
		if k == "TOKEN" {
			return "t0k", true
		}
		return "", false
	})
	require.Nil(t, vals)
	var list script.ErrorList
	require.ErrorAs(t, err, &list)
	require.Len(t, list, 1)
	require.Equal(t, "variables.env.key", list[0].Path)
	require.Equal(t, "environment variable KEY is not set and has no default", list[0].Message)

	vals, err = s.ResolveEnv(func(k string) (string, bool) { return k + "!", true })
	require.NoError(t, err)
	require.Equal(t, map[string]string{"token": "TOKEN!", "region": "REGION!", "key": "KEY!"}, vals)
}

func TestUnknownNamesAreColumnsUntilDataIsRead(t *testing.T) {
	t.Parallel()
	// With a data file not yet read, ${email} may be one of its columns.
	s := mustParse(t, strings.Replace(wrap(`[{name: g, requests: [{name: r, url: "/${email}"}]}]`), "session:", "variables: {data: [{file: users.csv}]}\nsession:", 1))
	require.Equal(t, []string{"email"}, s.Session.Groups[0].Requests[0].URL.Vars())
}

func TestSampleThink(t *testing.T) {
	t.Parallel()
	r := newRand()
	u := &script.Think{Kind: script.ThinkUniform, Min: time.Second, Max: 3 * time.Second}
	g := &script.Think{Kind: script.ThinkGaussian, Mean: time.Second, StdDev: 2 * time.Second}
	for range 1000 {
		d := u.Sample(r)
		require.GreaterOrEqual(t, d, time.Second)
		require.LessOrEqual(t, d, 3*time.Second)
		require.GreaterOrEqual(t, g.Sample(r), time.Duration(0))
	}
	require.Equal(t, 2*time.Second, (&script.Think{Kind: script.ThinkFixed, Fixed: 2 * time.Second}).Sample(r))
}

func TestStageRate(t *testing.T) {
	t.Parallel()
	st := script.Stage{From: 10, To: 110, Duration: 10 * time.Second}
	require.InDelta(t, 10.0, st.RateAt(0), 1e-9)
	require.InDelta(t, 60.0, st.RateAt(5*time.Second), 1e-9)
	require.InDelta(t, 110.0, st.RateAt(time.Minute), 1e-9)
}

func jsonNumber(s string) json.Number { return json.Number(s) }

func newRand() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }

// The old spellings of plugin kinds still parse, each with a note saying the new one.
func TestOldKindSpellingsParseWithANote(t *testing.T) {
	src := "version: 1\nname: x\nplugins:\n  - {use: rnd@1.0.0, as: rnd, kind: element}\n  - {use: mod@1.0.0, as: mod, kind: source-modifier}\n" +
		"session: {groups: [{name: g, requests: [{name: r, url: 'http://127.0.0.1/'}]}]}\nload: {vus: 1, iterations: 1}\n"
	s, err := script.Parse([]byte(src), script.ParseOptions{Filename: "x.yaml"})
	require.NoError(t, err)
	require.Equal(t, script.ElementPlugin, s.Plugins[0].Kind)
	require.Equal(t, script.SourcePlugin, s.Plugins[1].Kind)
	require.Len(t, s.Deprecations, 1)
	require.Equal(t, 4, s.Deprecations[0].Line)
	require.Contains(t, s.Deprecations[0].Error(), "element is the old spelling of session-element")
}

// ${secret.NAME} reads a secret: the script lists the names it reads, and no plugin may take
// the name secret.
func TestScriptsListTheSecretsTheyRead(t *testing.T) {
	t.Parallel()
	s, err := script.Parse([]byte(`version: 1
name: s
session:
  groups:
    - name: g
      requests:
        - { name: a, url: "http://127.0.0.1/${secret.B_KEY}", headers: { X-A: "${secret.A}" } }
        - { name: b, url: "http://127.0.0.1/", body: { json: { k: "${secret.A}" } } }
load: { vus: 1, iterations: 1 }
`), script.ParseOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"A", "B_KEY"}, s.Secrets)

	_, err = script.Parse([]byte(`version: 1
name: s
plugins:
  - { use: ./p, as: secret, kind: session-element }
session: { groups: [ { name: g, requests: [ { name: a, url: "http://127.0.0.1/" } ] } ] }
load: { vus: 1, iterations: 1 }
`), script.ParseOptions{})
	require.ErrorContains(t, err, "a plugin may not be named secret")
}

// A check named by its text escapes what would forge a line of a printed tally, and is cut to a
// name's length; a script that would measure more labels than an agent may report is refused.
func TestChecksNamedByTheirTextPrintSafely(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300)
	s, err := script.Parse([]byte(`version: 1
session:
  groups:
    - name: g
      requests:
        - name: r
          url: http://127.0.0.1/
          assert:
            - body_contains: "\e[31mRED\r\nfake line"
            - body_contains: `+long+`
load: { vus: 1, iterations: 1 }
`), script.ParseOptions{})
	require.NoError(t, err)
	checks := s.Session.Checks()
	require.Equal(t, `body_contains \x1b[31mRED\r\nfake line`, checks[0].Name)
	require.LessOrEqual(t, len(checks[1].Name), 200)
	require.True(t, strings.HasSuffix(checks[1].Name, "…"))
	require.Equal(t, "r: "+checks[0].Name, script.CheckLabelText(checks[0].Label()))

	var b strings.Builder
	b.WriteString("version: 1\nsession:\n  groups:\n    - name: g\n      requests:\n        - name: r\n          url: http://127.0.0.1/\n          assert:\n")
	for i := range script.MaxLabels {
		fmt.Fprintf(&b, "            - { name: c%d, status: 200 }\n", i)
	}
	b.WriteString("load: { vus: 1, iterations: 1 }\n")
	_, err = script.Parse([]byte(b.String()), script.ParseOptions{})
	require.ErrorContains(t, err, "the script measures 1003 labels (its requests, groups, WebSocket steps and checks); at most 1000")
}

// A document of tens of thousands of mistakes is refused with the first MaxErrors of them and a
// count of the rest: the answer stays small whatever the body holds.
func TestTheErrorListIsCapped(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("version: 1\nname: x\na: &a [1]\nb:\n")
	for range 60_000 {
		b.WriteString("  - *a\n")
	}
	for _, doc := range []string{b.String(), `{"version": 1, ` + strings.Repeat(`"k": 1, `, 50_000) + `"z": 1}`} {
		_, err := script.Parse([]byte(doc), script.ParseOptions{})
		var list script.ErrorList
		require.ErrorAs(t, err, &list)
		require.Len(t, list, script.MaxErrors+1)
		require.Regexp(t, `^and \d+ more errors, not listed: fix these first$`, list[script.MaxErrors].Message)
		require.Less(t, len(err.Error()), 64<<10, "the whole list is small")
	}
}

// A document of more values than MaxValues is refused before it is parsed, whatever its form:
// what it would cost to parse is what it holds, not its bytes. (Not parallel: it measures what
// it allocates.)
func TestADocumentOfTooManyValuesIsRefusedUnparsed(t *testing.T) {
	for _, doc := range []string{"[" + strings.Repeat("1,", script.MaxValues) + "1]", strings.Repeat("- 1\n", script.MaxValues+1)} {
		data := []byte(doc)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := script.Parse(data, script.ParseOptions{})
		runtime.ReadMemStats(&after)
		require.ErrorContains(t, err, "more than the 100000 allowed")
		require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(len(doc)/4), "refused without building its tree (it would cost 100 times its bytes)")
	}
}
