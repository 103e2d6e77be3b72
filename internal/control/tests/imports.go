package tests

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/har"
)

// ImportInput is a HAR recording to make a test of, and how.
type ImportInput struct {
	// Name names the test; empty: the script's own name (recording of HOST).
	Name string
	HAR  []byte
	// Assets keeps static assets, left out by default.
	Assets bool
	// Project is where the test goes (nil: the principal's home project).
	Project *uuid.UUID
}

// ImportTest converts a HAR recording into a script with the converter `barrage import har`
// uses, and stores it as a new test in in.Project, as CreateTest does. It returns the test and what the
// conversion found. Nothing is fetched: the HAR holds all the conversion reads. Wherever the
// recording sent one of the project's secrets, the script reads ${secret.NAME}, and nothing
// returned or stored holds its value.
func (s *Service) ImportTest(ctx context.Context, p barrage.Principal, in ImportInput) (barrage.Test, *har.Result, error) {
	project, err := p.ProjectFor(in.Project, barrage.ProjectEditor)
	if err != nil {
		return barrage.Test{}, nil, err
	}
	l, err := har.Decode(in.HAR)
	if err != nil {
		return barrage.Test{}, nil, err
	}
	secrets, err := s.deps.Secrets.All(ctx, project)
	if err != nil {
		return barrage.Test{}, nil, err
	}
	budget, key := cmp.Or(s.cfg.ConversionBudget, DefaultConversionBudget), "convert:"+p.User.ID.String()
	if err := s.store.Throttle(ctx, key, budget, 0, s.cfg.Now()); err != nil {
		var rl *barrage.RateLimitError
		if errors.As(err, &rl) {
			rl.Reason = fmt.Sprintf("your recordings took the %d seconds of conversion one user may spend in %s", budget.N, budget.Per)
		}
		return barrage.Test{}, nil, err
	}
	start := time.Now()
	res, err := har.Convert(l, har.Options{Assets: in.Assets, Secrets: secrets})
	// What it took is spent, whatever came of it: a refused HAR took the time too.
	if terr := s.store.Throttle(ctx, key, budget, time.Since(start).Seconds(), s.cfg.Now()); terr != nil && !errors.Is(terr, barrage.ErrRateLimited) {
		return barrage.Test{}, nil, terr
	}
	if err != nil {
		return barrage.Test{}, nil, err
	}
	t, err := s.CreateTest(ctx, p, TestInput{Name: in.Name, Format: barrage.FormatYAML, Source: res.Script, Project: &project})
	if err != nil {
		return barrage.Test{}, nil, fmt.Errorf("store the imported test: %w", err)
	}
	return t, res, nil
}
