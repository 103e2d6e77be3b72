package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README's walk-through: admin signs up with the first code, logs in, issues a demo
// invitation; a second user signs up and sees its license; the spent code is refused; the user is
// kept out of admin routes and away from the admin's tokens.
func TestWalkthrough(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, err := b.svc.EnsureFirstAdmin(t.Context())
	require.NoError(t, err)
	secret(code)
	again, err := b.svc.EnsureFirstAdmin(t.Context())
	require.NoError(t, err)
	require.Empty(t, again, "a second start must not issue another first-admin code while one is redeemable")

	admin := b.signup(code, "admin@example.com")
	me := b.do("GET", "/v1/me", admin.access, nil).json(t)
	require.Equal(t, "admin", me["role"])
	require.Equal(t, true, me["license"].(map[string]any)["unlimited"])

	login := b.do("POST", "/v1/auth/login", "", map[string]any{"email": "ADMIN@example.com", "password": admin.password})
	require.Equal(t, http.StatusOK, login.status, "body: %s", login.body)
	pair := login.json(t)
	secret(pair["access_token"].(string))
	secret(pair["refresh_token"].(string))
	require.Equal(t, "Bearer", pair["token_type"])
	require.EqualValues(t, 900, pair["expires_in"])
	access := pair["access_token"].(string)

	inv := b.do("POST", "/v1/admin/invitations", access, map[string]any{"license": map[string]any{"template": "demo"}, "note": "for bob"})
	require.Equal(t, http.StatusCreated, inv.status, "body: %s", inv.body)
	invBody := inv.json(t)
	userCode := secret(invBody["code"].(string))
	require.Len(t, userCode, len("brg_inv_")+32, "160 bits in base32")
	require.Equal(t, "user", invBody["role"])
	require.Equal(t, "active", invBody["state"])

	list := b.do("GET", "/v1/admin/invitations", access, nil)
	require.Equal(t, http.StatusOK, list.status)
	require.NotContains(t, string(list.body), userCode, "listing must never show codes")
	require.NotContains(t, string(list.body), `"code"`)

	bob := b.signup(userCode, "bob@example.com")
	lic := b.do("GET", "/v1/me/license", bob.access, nil)
	require.Equal(t, http.StatusOK, lic.status)
	l := lic.json(t)
	require.Equal(t, "demo", l["plan"])
	require.EqualValues(t, 100, l["max_vus"])
	require.Equal(t, false, l["unlimited"])
	require.Equal(t, false, l["expired"])

	reuse := b.do("POST", "/v1/auth/signup", "", map[string]any{
		"invitation_code": userCode, "email": "eve@example.com", "password": secret("another long password"), "name": "Eve",
	})
	p := requireProblem(t, reuse, http.StatusConflict)
	require.Contains(t, p["detail"], "already been used")

	token := b.do("POST", "/v1/tokens", admin.access, map[string]any{"name": "ci", "scopes": []string{"read"}})
	require.Equal(t, http.StatusCreated, token.status, "body: %s", token.body)
	secret(token.json(t)["token"].(string))
	tokenID := token.json(t)["id"].(string)

	requireProblem(t, b.do("DELETE", "/v1/tokens/"+tokenID, bob.access, nil), http.StatusNotFound)
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/admin/invitations"},
		{"POST", "/v1/admin/invitations"},
		{"DELETE", "/v1/admin/invitations/" + invBody["id"].(string)},
		{"GET", "/v1/admin/users"},
		{"GET", "/v1/admin/users/" + admin.id},
		{"PATCH", "/v1/admin/users/" + admin.id},
	} {
		var body any
		if r.method == "POST" || r.method == "PATCH" {
			body = map[string]any{"role": "admin"}
		}
		requireProblem(t, b.do(r.method, r.path, bob.access, body), http.StatusForbidden)
	}
	// The admin's token still exists: bob's delete did nothing.
	toks := b.do("GET", "/v1/tokens", admin.access, nil).json(t)
	require.Len(t, toks["items"], 1)
}
