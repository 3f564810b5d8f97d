package postgres

// ListConversationsQuery exposes the list query to the external tests that
// EXPLAIN it.
var ListConversationsQuery = listConversationsQuery

// InboxListQuery and InboxCountQuery expose the inbox's queries to the
// scale test that EXPLAINs them.
var (
	InboxListQuery  = inboxListQuery
	InboxCountQuery = inboxCountQuery
)
