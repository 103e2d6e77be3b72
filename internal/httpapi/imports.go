package httpapi

import (
	"bytes"
	"context"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/control/tests"
	"github.com/barrage-load/barrage/internal/har"
)

func (s *server) ImportTest(ctx context.Context, req api.ImportTestRequestObject) (api.ImportTestResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	// The HAR as it came: the converter reads it with its own decoder, which names each field
	// it refuses (the generated type knows only its outline).
	in := tests.ImportInput{HAR: bytes.Clone(rawBody(ctx)), Project: req.Params.Project}
	if req.Params.Name != nil {
		in.Name = *req.Params.Name
	}
	if req.Params.Assets != nil {
		in.Assets = *req.Params.Assets
	}
	t, res, err := s.tests.ImportTest(ctx, p, in)
	if err != nil {
		return nil, err
	}
	return api.ImportTest201JSONResponse(toAPITestImport(t, res)), nil
}

// toAPITestImport is a test made from a HAR with what its conversion found.
func toAPITestImport(t barrage.Test, res *har.Result) api.TestImport {
	out := api.TestImport{Test: toAPITest(t), Requests: res.Requests, Groups: res.Groups, AssetsLeftOut: res.AssetsLeftOut, Skipped: res.Skipped,
		Correlations: []api.Correlation{}, DataBound: toAPIRecordedValues(res.DataBound), Parameters: toAPIRecordedValues(res.Parameters),
		Missed: []api.MissedCorrelation{}, Warnings: append([]string{}, res.Warnings...), Secrets: append([]string{}, res.Secrets...)}
	for _, c := range res.Correlations {
		ac := api.Correlation{Variable: c.Var, Value: c.Value, Request: c.Request, Seen: c.Seen,
			Extractor: api.CorrelationExtractor(c.Kind), Expression: c.Expr, Uses: []api.CorrelationUse{}}
		for _, u := range c.Uses {
			ac.Uses = append(ac.Uses, api.CorrelationUse{Request: u.Request, Where: u.Where})
		}
		out.Correlations = append(out.Correlations, ac)
	}
	for _, m := range res.Missed {
		out.Missed = append(out.Missed, api.MissedCorrelation{Value: m.Value, Request: m.Request, Where: m.Where, Source: m.Source, Why: m.Why})
	}
	return out
}

func toAPIRecordedValues(ps []har.Parameter) []api.RecordedValue {
	out := []api.RecordedValue{}
	for _, p := range ps {
		v := api.RecordedValue{Request: p.Request, Where: p.Where, Value: p.Value}
		if p.Column != "" {
			v.Column = &p.Column
		}
		out = append(out, v)
	}
	return out
}
