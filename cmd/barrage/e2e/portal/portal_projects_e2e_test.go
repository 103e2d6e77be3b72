package portal_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/e2etest"
	"github.com/barrage-load/barrage/internal/portal/portaltest"
)

// A team in the portal: the owner makes a project and invites a colleague by email as an
// editor; the colleague accepts on the projects page and writes a test into the project; the
// owner finds it among their tests, marked with the project; made a viewer, the colleague is
// refused changing it (403, naming the role); removed, they reach nothing of it.
func TestProjectsInChromium(t *testing.T) {
	s := e2etest.NewPortalUser(t)
	p := s.Server
	ob := portaltest.New(t, p.URL)
	ob.Go("/signup")
	ob.WaitTitle("Sign up · Barrage")
	e2etest.SignUp(ob, s.Code, "olga@example.com", "Olga", "olga long password")
	ob.WaitTitle("Tests · Barrage")
	bb := portaltest.New(t, p.URL)
	bb.Go("/signup")
	bb.WaitTitle("Sign up · Barrage")
	e2etest.SignUp(bb, e2etest.Invite(t, p, s.Admin), "bo@example.com", "Bo", "bos long password")
	bb.WaitTitle("Tests · Barrage")

	ob.Follow("Projects")
	ob.WaitTitle("Projects · Barrage")
	require.Contains(t, ob.Text(), "personal")
	ob.Fill("Project name", "Shop team")
	ob.Click("Make it")
	ob.WaitTitle("Project Shop team · Barrage")
	ob.Fill("Email or user id", "nobody@example.com")
	ob.Click("Invite")
	ob.WaitText("no account has this email")
	ob.Fill("Email or user id", "BO@example.com")
	ob.Choose("Role", "editor: writes tests, agents, targets, secrets")
	ob.Click("Invite")
	ob.WaitFor(`[...document.querySelectorAll("tbody tr")].some((r) => r.innerText.startsWith("bo@example.com"))`)
	ob.Inspect("project")
	project := strings.TrimPrefix(portaltest.Eval[string](ob, `location.pathname`), "/projects/")

	bb.Follow("Projects")
	bb.WaitText("Invitations waiting for you")
	bb.Inspect("projects")
	bb.Click("Accept the invitation to Shop team")
	bb.WaitFor(`[...document.querySelectorAll("tbody tr")].some((r) => r.innerText.startsWith("Shop team") && r.innerText.includes("editor"))`)
	bb.Follow("Shop team")
	bb.WaitTitle("Project Shop team · Barrage")
	bb.Follow("Its tests")
	bb.WaitTitle("Tests · Barrage")
	bb.Follow("Write a test")
	bb.WaitTitle("Write a test · Barrage")
	require.Contains(t, portaltest.Eval[string](bb, `location.search`), project)
	bb.Click("Save test")
	bb.WaitFor(`/^\/tests\/[0-9a-f-]{36}$/.test(location.pathname)`)
	test := strings.TrimPrefix(portaltest.Eval[string](bb, `location.pathname`), "/tests/")

	// The owner finds it among all their tests, marked with its project.
	ob.Go("/tests")
	ob.WaitTitle("Tests · Barrage")
	row := `[...document.querySelectorAll("tbody tr")].find((r) => r.querySelector("a[href='/tests/` + test + `']"))`
	// The project's name comes with the projects' list, which may arrive after the tests'.
	ob.WaitFor(row + `?.innerText.includes("Shop team")`)
	ob.Choose("Project", "Personal")
	ob.WaitFor(`location.search.startsWith("?project=") && !document.querySelector("a[href='/tests/` + test + `']")`)

	// Made a viewer, Bo is refused changing it; removed, he reaches nothing of it.
	ob.Go("/projects/" + project)
	ob.WaitTitle("Project Shop team · Barrage")
	ob.Choose("Role of bo@example.com", "viewer")
	ob.WaitFor(`[...document.querySelectorAll("tbody tr")].some((r) => r.innerText.startsWith("Bo") && r.querySelector("select").value === "viewer")`)
	// The list shows the choice at once; the server has it once the page's request is answered.
	e2etest.Eventually(t, portaltest.Timeout, "Bo a viewer on the server", func() bool {
		status, body := ob.Fetch("GET", "/v1/projects/"+project, "", false)
		var detail struct {
			Members []struct{ Email, Role string } `json:"member_list"`
		}
		require.Equal(t, http.StatusOK, status, body)
		require.NoError(t, json.Unmarshal([]byte(body), &detail))
		return slices.ContainsFunc(detail.Members, func(m struct{ Email, Role string }) bool {
			return m.Email == "bo@example.com" && m.Role == "viewer"
		})
	})
	status, body := bb.Fetch("DELETE", "/v1/tests/"+test, "", true)
	require.Equal(t, http.StatusForbidden, status, body)
	require.Contains(t, body, "this takes the editor role in its project; you are a viewer there")
	ob.Click("Remove bo@example.com")
	ob.WaitFor(`![...document.querySelectorAll("tbody tr")].some((r) => r.innerText.startsWith("Bo"))`)
	status, _ = bb.Fetch("GET", "/v1/tests/"+test, "", false)
	require.Equal(t, http.StatusNotFound, status)
	bb.Go("/tests/" + test)
	bb.WaitText("test not found")
	require.True(t, regexp.MustCompile(`Not Found|not found`).MatchString(bb.Text()))
}
