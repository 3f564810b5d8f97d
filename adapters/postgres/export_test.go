package postgres

// ListConversationsQuery exposes the list query to the external tests that
// EXPLAIN it.
var ListConversationsQuery = listConversationsQuery
