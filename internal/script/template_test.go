package script_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/script"
)

func TestTemplateRenders(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"user": "ada", "id": "42", "rnd.email": "a@x.test", "empty": ""}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	cases := []struct {
		src, want string
		vars      []string
	}{
		{"plain text", "plain text", nil},
		{"", "", nil},
		{"/users/${user}/orders/${id}", "/users/ada/orders/42", []string{"user", "id"}},
		{"${user}${user}", "adaada", []string{"user"}},
		{"${ user }", "ada", []string{"user"}},
		{"mail ${rnd.email}", "mail a@x.test", []string{"rnd.email"}},
		{"[${empty}]", "[]", []string{"empty"}},
		{"cost: $5, $${user} stays", "cost: $5, ${user} stays", nil},
		{"$$ and $ alone", "$$ and $ alone", nil},
		{"{${id}}", "{42}", []string{"id"}},
	}
	for _, tc := range cases {
		tpl := script.MustTemplate(tc.src)
		got, err := tpl.Render(lookup, []byte("> "))
		require.NoError(t, err, tc.src)
		require.Equal(t, "> "+tc.want, string(got), tc.src)
		require.Equal(t, tc.vars, tpl.Vars(), tc.src)
		require.Equal(t, tc.src, tpl.String())
		lit, ok := tpl.Literal()
		require.Equal(t, tc.vars == nil, ok, tc.src)
		if ok {
			require.Equal(t, tc.want, lit)
		}
	}
}

func TestTemplateUnsetVariable(t *testing.T) {
	t.Parallel()
	_, err := script.MustTemplate("a ${b} c").Render(func(string) (string, bool) { return "", false }, nil)
	var unset *script.UnsetVariableError
	require.ErrorAs(t, err, &unset)
	require.Equal(t, "b", unset.Name)
	require.Equal(t, "variable ${b} is not set", err.Error())
}

func TestTemplateRefusesMalformed(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"${", "a ${b", "${}", "${a b}", "${1a}", "${a.}", "${.a}", "${a-b}"} {
		require.Panics(t, func() { script.MustTemplate(src) }, src)
	}
}

func BenchmarkTemplateRender(b *testing.B) {
	tpl := script.MustTemplate("http://127.0.0.1:8080/users/${user}/orders/${id}?session=${sid}")
	vars := map[string]string{"user": "ada", "id": "42", "sid": "0123456789abcdef"}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = tpl.Render(lookup, buf[:0])
	}
}
