package httpapi

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/fleet"
	"github.com/barrage-load/barrage/internal/control/tests"
)

func init() {
	// A test's YAML is the script parser's to read, so that its errors name their lines: the
	// validator takes it as text, as it takes the audit log's export (a JSON document a line).
	openapi3filter.RegisterBodyDecoder("application/yaml", textBody)
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", textBody)
}

// textBody decodes a body the validator reads as text.
func textBody(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	b, err := io.ReadAll(r)
	return string(b), err
}

// testInput reads a test's session from a create or update request: the body as it came, with
// its format from the content type the validator accepted.
func testInput(ctx context.Context, isJSON bool, name *string) tests.TestInput {
	in := tests.TestInput{Format: barrage.FormatYAML, Source: bytes.Clone(rawBody(ctx))}
	if isJSON {
		in.Format = barrage.FormatJSON
	}
	if name != nil {
		in.Name = *name
	}
	return in
}

func (s *server) CreateTest(ctx context.Context, req api.CreateTestRequestObject) (api.CreateTestResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := testInput(ctx, req.JSONBody != nil, req.Params.Name)
	in.Project = req.Params.Project
	t, err := s.tests.CreateTest(ctx, p, in)
	if err != nil {
		return nil, err
	}
	return api.CreateTest201JSONResponse(toAPITest(t)), nil
}

// CheckTest is the strict handler's checkTest, which the router does not call: checkRaw serves
// it from the body as it came.
func (s *server) CheckTest(ctx context.Context, req api.CheckTestRequestObject) (api.CheckTestResponseObject, error) {
	return s.checkTest(ctx, req.JSONBody != nil)
}

// checkRaw serves checkTest from the body as it came: the strict handler decodes a JSON body
// before its method runs, and answers 400 for one that does not decode, where a check answers
// with what the parser found in it, lines named (and decodes nothing but with the parser).
type checkRaw struct {
	api.ServerInterface
	s *server
}

func (c checkRaw) CheckTest(w http.ResponseWriter, r *http.Request) {
	// The validator took one of the two media types the operation names.
	res, err := c.s.checkTest(r.Context(), strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"))
	if err == nil {
		err = res.VisitCheckTestResponse(w)
	}
	if err != nil {
		writeError(c.s.log, w, r, err)
	}
}

// checkTest checks the request's session, JSON or YAML, as a save would, and stores nothing.
func (s *server) checkTest(ctx context.Context, isJSON bool) (api.CheckTestResponseObject, error) {
	if _, err := principal(ctx); err != nil {
		return nil, err
	}
	name, refused, err := s.tests.CheckTest(testInput(ctx, isJSON, nil))
	if err != nil {
		return nil, err
	}
	out := api.CheckTest200JSONResponse{Valid: len(refused) == 0, Errors: make([]api.FieldError, len(refused))}
	if name != "" {
		out.Name = &name
	}
	for i, f := range refused {
		out.Errors[i] = api.FieldError{Field: f.Field, Reason: f.Reason}
		if f.Line > 0 {
			out.Errors[i].Line = ptr(f.Line)
		}
	}
	return out, nil
}

func (s *server) UpdateTest(ctx context.Context, req api.UpdateTestRequestObject) (api.UpdateTestResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.tests.SaveTest(ctx, p, req.Id, testInput(ctx, req.JSONBody != nil, req.Params.Name))
	if err != nil {
		return nil, err
	}
	return api.UpdateTest200JSONResponse(toAPITest(t)), nil
}

func (s *server) ListTests(ctx context.Context, req api.ListTestsRequestObject) (api.ListTestsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	items, next, err := listPage(req.Params.Cursor, req.Params.Limit, func(before *uuid.UUID, limit int) (barrage.Page[barrage.Test], error) {
		return s.tests.Tests(ctx, p, req.Params.Project, before, limit)
	}, toAPITest)
	return api.ListTests200JSONResponse{Items: items, NextCursor: next}, err
}

func (s *server) GetTest(ctx context.Context, req api.GetTestRequestObject) (api.GetTestResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.tests.Test(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	return api.GetTest200JSONResponse(toAPITest(t)), nil
}

func (s *server) DeleteTest(ctx context.Context, req api.DeleteTestRequestObject) (api.DeleteTestResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.tests.DeleteTest(ctx, p, req.Id); err != nil {
		return nil, err
	}
	return api.DeleteTest204Response{}, nil
}

func (s *server) ListTestRevisions(ctx context.Context, req api.ListTestRevisionsRequestObject) (api.ListTestRevisionsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	revs, err := s.tests.TestRevisions(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	out := api.ListTestRevisions200JSONResponse{Items: make([]api.TestRevision, len(revs))}
	for i, r := range revs {
		out.Items[i] = toAPIRevision(r)
	}
	return out, nil
}

func (s *server) GetTestRevision(ctx context.Context, req api.GetTestRevisionRequestObject) (api.GetTestRevisionResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	r, err := s.tests.TestRevision(ctx, p, req.Id, req.Rev)
	if err != nil {
		return nil, err
	}
	return api.GetTestRevision200JSONResponse(toAPIRevision(r)), nil
}

func (s *server) PutTestFile(ctx context.Context, req api.PutTestFileRequestObject) (api.PutTestFileResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	f, created, err := s.tests.PutTestFile(ctx, p, req.Id, req.Name, bytes.Clone(rawBody(ctx)))
	if err != nil {
		return nil, err
	}
	if created {
		return api.PutTestFile201JSONResponse(toAPITestFile(f)), nil
	}
	return api.PutTestFile200JSONResponse(toAPITestFile(f)), nil
}

func (s *server) GetTestFile(ctx context.Context, req api.GetTestFileRequestObject) (api.GetTestFileResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	f, err := s.tests.TestFile(ctx, p, req.Id, req.Name)
	if err != nil {
		return nil, err
	}
	return api.GetTestFile200ApplicationoctetStreamResponse{Body: bytes.NewReader(f.Content), ContentLength: int64(len(f.Content))}, nil
}

func (s *server) DeleteTestFile(ctx context.Context, req api.DeleteTestFileRequestObject) (api.DeleteTestFileResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.tests.DeleteTestFile(ctx, p, req.Id, req.Name); err != nil {
		return nil, err
	}
	return api.DeleteTestFile204Response{}, nil
}

func jobInput(b *api.TestJobRequest) tests.JobInput {
	var in tests.JobInput
	if b != nil {
		in.AgentID = b.AgentId
		if b.Revision != nil {
			in.Revision = *b.Revision
		}
	}
	return in
}

func (s *server) DebugTest(ctx context.Context, req api.DebugTestRequestObject) (api.DebugTestResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	a, rev, result, err := s.tests.DebugTest(ctx, p, req.Id, jobInput(req.Body))
	if err != nil {
		return nil, err
	}
	var trace api.DebugTrace
	if err := json.Unmarshal(result, &trace); err != nil {
		return nil, fmt.Errorf("test %s: the agent's trace: %w", req.Id, err)
	}
	return api.DebugTest200JSONResponse{AgentId: a.ID, Revision: rev, Passed: trace.Passed, Error: trace.Error, Requests: trace.Requests}, nil
}

func (s *server) GenerateScript(ctx context.Context, req api.GenerateScriptRequestObject) (api.GenerateScriptResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	sc, err := s.tests.GenerateScript(ctx, p, req.Id, jobInput(req.Body))
	if err != nil {
		return nil, err
	}
	return api.GenerateScript201JSONResponse(toAPIScript(sc)), nil
}

func (s *server) AgentAnswerJob(ctx context.Context, req api.AgentAnswerJobRequestObject) (api.AgentAnswerJobResponseObject, error) {
	a, err := agentPrincipal(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	var ans fleet.JobAnswer
	switch {
	case b.Error != nil:
		ans.Error = *b.Error
	case b.Debug != nil:
		ans.Kind = barrage.JobDebug
		ans.Result, err = json.Marshal(b.Debug)
	case b.Generated != nil:
		ans.Kind = barrage.JobGenerate
		g := tests.Generated{Source: []byte(b.Generated.Source), Plugins: api.PinsFrom(b.Generated.Plugins)}
		ans.Result, err = json.Marshal(g)
	}
	if err != nil {
		return nil, err
	}
	if err := s.fleet.AnswerJob(ctx, a, req.Id, ans); err != nil {
		return nil, err
	}
	return api.AgentAnswerJob204Response{}, nil
}

func toAPITest(t barrage.Test) api.Test {
	v := api.Test{Id: t.ID, ProjectId: t.ProjectID, Name: t.Name, LatestRevision: t.LatestRevision, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
		Files: make([]api.TestFileRef, len(t.Files))}
	for i, f := range t.Files {
		v.Files[i] = toAPITestFile(f)
	}
	if r := t.LastRun; r != nil {
		v.LastRun = &api.TestLastRun{Id: r.ID, State: api.RunState(r.State), CreatedAt: r.CreatedAt, EndedAt: r.EndedAt,
			Outcome: toAPIOutcome(r.Outcome)}
	}
	v.Baseline = toAPIBaseline(t.Baseline)
	return v
}

func toAPITestFile(f barrage.TestFile) api.TestFileRef {
	return api.TestFileRef{Name: f.Name, Sha256: hex.EncodeToString(f.SHA256), Size: f.Size, UpdatedAt: f.UpdatedAt}
}

func toAPIRevision(r barrage.TestRevision) api.TestRevision {
	v := api.TestRevision{Revision: r.Revision, Format: api.TestRevisionFormat(r.Format), Sha256: hex.EncodeToString(r.SHA256),
		Size: r.Size, CreatedAt: r.CreatedAt}
	if r.Source != nil {
		v.Source = ptr(string(r.Source))
	}
	return v
}
