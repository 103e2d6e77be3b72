package control

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/script"
)

// ScriptInput is a script as a user uploads it, with its data files by name.
type ScriptInput struct {
	Name   string // empty: the script's own
	Source []byte
	Files  []barrage.ScriptFile
}

// CreateScript checks a script with the parser `barrage run` uses, its data files included, and
// stores it immutably with its digest and manifest. A refused script's error lists every
// problem with its path and line.
func (s *Service) CreateScript(ctx context.Context, p barrage.Principal, in ScriptInput) (barrage.Script, error) {
	files := make(map[string][]byte, len(in.Files))
	for _, f := range in.Files {
		files[f.Name] = f.Content
	}
	parsed, err := script.LoadBundle(in.Source, files)
	if err != nil {
		return barrage.Script{}, err
	}
	if len(parsed.Plugins) > 0 {
		// Source modifiers must run before a script is stored, and only agents run plugins.
		return barrage.Script{}, barrage.Invalid("source", fmt.Sprintf("the script uses plugins (%s): "+
			"scripts with plugins cannot run on agents yet", parsed.Plugins[0].Ref))
	}
	sum := sha256.Sum256(in.Source)
	sc := barrage.Script{
		ID: uuid.Must(uuid.NewV7()), OwnerID: p.User.ID, Name: in.Name, Source: in.Source, SHA256: sum[:],
		Files: in.Files, Manifest: barrage.ScriptManifest{Plugins: []barrage.PluginPin{}, Files: []barrage.ScriptFileRef{}},
	}
	if sc.Name == "" {
		sc.Name = parsed.Name
	}
	for _, f := range in.Files {
		fs := sha256.Sum256(f.Content)
		sc.Manifest.Files = append(sc.Manifest.Files, barrage.ScriptFileRef{Name: f.Name, SHA256: hex.EncodeToString(fs[:]), Size: int64(len(f.Content))})
	}
	sc, err = s.store.CreateScript(ctx, sc)
	if err != nil {
		return barrage.Script{}, err
	}
	s.log.InfoContext(ctx, "script stored", slog.String("script_id", sc.ID.String()))
	return sc, nil
}

// Script reads p's script id.
func (s *Service) Script(ctx context.Context, p barrage.Principal, id uuid.UUID) (barrage.Script, error) {
	return s.store.Script(ctx, p.User.ID, id)
}
