// Package migrations holds the numbered SQL migrations of Barrage's schema. They are embedded in
// the binary, applied in order by postgres.Migrate, and read by sqlc as the schema.
package migrations

import "embed"

// FS holds the migration files, named NNNN_description.sql.
//
//go:embed *.sql
var FS embed.FS
