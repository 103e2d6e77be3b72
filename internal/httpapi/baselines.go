package httpapi

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/runs"
	"github.com/barrage-load/barrage/internal/summary"
)

func (s *server) SetTestBaseline(ctx context.Context, req api.SetTestBaselineRequestObject) (api.SetTestBaselineResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	var tol *summary.Tolerances
	if b.MaxP50Regression != nil || b.MaxP95Regression != nil || b.MaxP99Regression != nil || b.MaxRpsRegression != nil || b.MaxErrorIncrease != nil {
		t := tolerances(b.MaxP50Regression, b.MaxP95Regression, b.MaxP99Regression, b.MaxRpsRegression, b.MaxErrorIncrease)
		tol = &t
	}
	t, err := s.runs.SetBaseline(ctx, p, req.Id, b.RunId, tol)
	if err != nil {
		return nil, err
	}
	return api.SetTestBaseline200JSONResponse(toAPITest(t)), nil
}

func (s *server) ClearTestBaseline(ctx context.Context, req api.ClearTestBaselineRequestObject) (api.ClearTestBaselineResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.runs.ClearBaseline(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	return api.ClearTestBaseline200JSONResponse(toAPITest(t)), nil
}

func (s *server) GetTestTrend(ctx context.Context, req api.GetTestTrendRequestObject) (api.GetTestTrendResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	limit := 20
	if req.Params.Limit != nil {
		limit = *req.Params.Limit
	}
	tr, err := s.runs.Trend(ctx, p, req.Id, limit)
	if err != nil {
		return nil, err
	}
	var out api.TestTrend
	if err := convert(tr, &out); err != nil {
		return nil, err
	}
	return api.GetTestTrend200JSONResponse(out), nil
}

// toAPIBaseline is a test's baseline with its tolerances in percent, the defaults filled in.
func toAPIBaseline(b *barrage.TestBaseline) *api.Baseline {
	if b == nil {
		return nil
	}
	tol, err := runs.Tolerances(b)
	if err != nil {
		tol = summary.DefaultTolerances // stored by SetBaseline from a Tolerances: it reads
	}
	return &api.Baseline{RunId: b.RunID, MaxP50Regression: 100 * tol.P50, MaxP95Regression: 100 * tol.P95,
		MaxP99Regression: 100 * tol.P99, MaxRpsRegression: 100 * tol.RPS, MaxErrorIncrease: 100 * tol.ErrorRate}
}

// convert is v in the contract's type out, by way of JSON: for the documents whose fields the
// contract's types mirror.
func convert(v, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func (s *server) GetRunJUnit(ctx context.Context, req api.GetRunJUnitRequestObject) (api.GetRunJUnitResponseObject, error) {
	sum, err := runSummary[summary.Document](ctx, s.runs, req.Id)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := sum.JUnit(&b, "run "+req.Id.String()); err != nil {
		return nil, err
	}
	return api.GetRunJUnit200ApplicationxmlResponse{Body: &b, ContentLength: int64(b.Len())}, nil
}
