package barrage

import (
	"time"

	"github.com/google/uuid"
)

// VersionState is where a plugin version stands in review.
type VersionState string

// A version is pending until an admin approves it (published) or rejects it; a published one
// may be deprecated (still usable, warned about) and revoked (no new run may use it).
const (
	VersionPending    VersionState = "pending"
	VersionPublished  VersionState = "published"
	VersionRejected   VersionState = "rejected"
	VersionDeprecated VersionState = "deprecated"
	VersionRevoked    VersionState = "revoked"
)

// Listed reports whether a version in state s is open to everyone signed in.
func (s VersionState) Listed() bool { return s == VersionPublished || s == VersionDeprecated }

// Plugin is a marketplace plugin, namespace/name: what its latest listed version says of it
// (its latest version, for its owners, while none is listed).
type Plugin struct {
	Namespace, Name string
	Listed          bool
	Latest          string
	Kinds           []string
	Description     string
	License         string
	SourceURL       string
	Tags            []string
	// Protocols and Platforms ("os/arch") are those of its latest version.
	Protocols []int
	Platforms []string
	Downloads int64
	// Runs counts the runs started with any of its versions.
	Runs      int64
	CreatedAt time.Time
	UpdatedAt time.Time
	// Versions are those the reader may see, newest first; filled when one plugin is read.
	Versions []PluginVersion
}

// PluginVersion is one immutable version of a plugin: what it is, the artifacts it is made of
// and their signed SHA256SUMS. Only its state moves.
type PluginVersion struct {
	Namespace, Name, Version string
	State                    VersionState
	StateReason              string
	Kinds                    []string
	Description              string
	Readme                   string
	License                  string
	SourceURL                string
	Tags                     []string
	Protocols                []int
	ConfigSchema             string // JSON Schema; empty accepts any config
	Network                  []string
	Artifacts                []PluginArtifact
	Sums                     []byte // SHA256SUMS of the artifacts
	Signature                []byte // Ed25519, of Sums
	Signer                   string // the id of the namespace key that made Signature
	PublishedBy              *uuid.UUID
	ReviewedBy               *uuid.UUID
	ReviewedAt               *time.Time
	Downloads, Runs          int64
	CreatedAt                time.Time
}

// Ref is namespace/name@version.
func (v PluginVersion) Ref() string { return v.Namespace + "/" + v.Name + "@" + v.Version }

// Artifact returns the version's artifact for os/arch.
func (v PluginVersion) Artifact(os, arch string) (PluginArtifact, bool) {
	for _, a := range v.Artifacts {
		if a.OS == os && a.Arch == arch {
			return a, true
		}
	}
	return PluginArtifact{}, false
}

// PluginArtifact is a version's file for one platform, kept in the blob store by its SHA-256.
type PluginArtifact struct {
	OS, Arch string
	File     string // its name in SHA256SUMS: name_version_os_arch
	Format   string // "elf", or "zipapp" for a Python plugin
	SHA256   string
	Size     int64
}

// PluginDownload is what a client needs to fetch one artifact and verify it: the artifact, the
// version's SHA256SUMS and signature, and the namespace's keys (retired ones included: they
// still verify what they signed).
type PluginDownload struct {
	Version  PluginVersion
	Artifact PluginArtifact
	Keys     []SigningKey
}
