package tests

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/script"
)

// ScriptInput is a script as a user uploads it, with its data files by name.
type ScriptInput struct {
	Name   string // empty: the script's own
	Source []byte
	Files  []barrage.ScriptFile
	// Project is where the script goes (nil: the principal's home project).
	Project *uuid.UUID
}

// CreateScript checks a script with the parser `barrage run` uses, its data files included, and
// stores it immutably with its digest and manifest. A refused script's error lists every
// problem with its path and line, in in.Project, where p is an editor. A script the project has
// already (the same source, name and files) is not stored again: that one is returned.
func (s *Service) CreateScript(ctx context.Context, p barrage.Principal, in ScriptInput) (barrage.Script, error) {
	project, err := p.ProjectFor(in.Project, barrage.ProjectEditor)
	if err != nil {
		return barrage.Script{}, err
	}
	parsed, err := script.CheckBundle(in.Source, in.Files)
	if err != nil {
		return barrage.Script{}, err
	}
	if len(parsed.Plugins) > 0 {
		// Plugins must be pinned (and source plugins run) before a script is stored, and only
		// agents run plugins: that is a test's generation.
		return barrage.Script{}, barrage.Invalid("source", fmt.Sprintf("the script uses plugins (%s): "+
			"save it as a test (POST /v1/tests, barrage tests push) and generate its script on an agent", parsed.Plugins[0].Ref))
	}
	name := parsed.Name
	if in.Name != "" {
		if name, err = barrage.CheckText("name", in.Name, 1, 200); err != nil {
			return barrage.Script{}, err
		}
	}
	return s.storeScript(ctx, p, project, name, in.Source, in.Files, barrage.ScriptManifest{})
}

// Script reads script id of one of p's projects.
func (s *Service) Script(ctx context.Context, p barrage.Principal, id uuid.UUID) (barrage.Script, error) {
	return s.store.Script(ctx, p.Projects(barrage.ProjectViewer), id)
}
