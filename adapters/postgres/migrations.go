package postgres

import "embed"

// Migrations holds the versioned SQL migrations (goose format) under
// migrations/. Goose owns the schema; gorm only reads and writes rows.
//
//go:embed migrations/*.sql
var Migrations embed.FS
