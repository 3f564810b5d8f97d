// Package postgres stores Concierge's data in PostgreSQL through gorm.
//
// It implements the store ports (workspaces, API keys, agents, sources,
// conversations and messages, inbound events) with unexported row structs and
// mappers, so domain types stay free of tags. The schema is owned by the goose
// migrations embedded in this package and applied by Migrate under an advisory
// lock; gorm never migrates anything.
//
// Conventions every method follows: each query starts from the base handle
// with WithContext; every query of tenant data is scoped by workspace id, and
// a miss (including another workspace's object) is a domain.NotFoundError;
// times are truncated to microseconds, PostgreSQL's precision, before they are
// stored, so keyset cursors built from returned values round-trip exactly;
// unreachable servers surface as domain.ErrUnavailable.
package postgres
