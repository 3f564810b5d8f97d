// Package postgres stores Concierge's data in PostgreSQL, through gorm and
// through pgx directly.
//
// It implements the store ports (workspaces, API keys, agents, sources and
// their knowledge, crawls, conversations and messages, feedback, answers in
// progress, deliveries, inbound events, console users and their sessions,
// memberships, invitations and resets) with unexported row structs and
// mappers, so domain types stay free of tags. The schema is owned by the
// goose migrations embedded in this package and applied by Migrate under an
// advisory lock; gorm never migrates anything.
//
// Conventions every method follows: each gorm query starts from the base
// handle with WithContext, and each pgx query takes the caller's context;
// every query of tenant data is scoped by workspace id, and a miss
// (including another workspace's object) is a domain.NotFoundError; times
// are truncated to microseconds, PostgreSQL's precision, before they are
// stored, so keyset cursors built from returned values round-trip exactly;
// unreachable servers surface as domain.ErrUnavailable.
//
// # gorm or pgx
//
// Open returns a DB: a pgx pool and a gorm handle over that same pool, and
// NewStore takes both. Which one a query uses follows from what it reads or
// writes.
//
// gorm, through the row structs, for the records managed one at a time and
// for reads that return rows of a row struct:
//   - workspaces, API keys, agents, sources and inbound events: creating,
//     reading, listing and updating them, deleting agents, and the Raw
//     statements on those tables (RevokeAPIKey, TouchAPIKey,
//     UpdateIntegrations);
//   - the people side (account.go): users, memberships, console sessions,
//     invitations and password resets, including the gorm transactions
//     that keep the last owner (row locks on the owners) and use a link
//     once (a conditional UPDATE ... RETURNING);
//   - the reads of conversations and messages into conversationRow and
//     messageRow: GetConversation, GetConversationBySession, ListMessages,
//     MessagesFrom, RecentMessages, HandoffTranscript (a REPEATABLE READ
//     transaction), KeyedQuestion, and AppendMessage's read of a message
//     stored before; with them, the small raw checks that explain a miss
//     (checkEmptyMessagePage, SetFeedback's read of the message's role).
//
// pgx, with hand-written SQL and positional scans, for:
//   - every write of the conversation wing: CreateConversation,
//     StartConversation, AppendMessage, AppendMessages, ChangeStatus,
//     CloseAnswer and SetFeedback's update. Each is one statement on the
//     pool (appendSQL, changeStatusSQL: data-modifying CTEs, one round trip
//     per chat turn), or a pgx transaction when the outbox rows of its
//     deliveries or other statements must commit with it (withDeliveries
//     and insertDeliveries take a querier, which is the pool or a pgx.Tx);
//   - the keyset lists the API serves most: ListConversations, ListFeedback
//     and ListDeliveries, which scan rows positionally instead of paying
//     gorm's reflection per row (see DEPENDENCIES.md);
//   - the tables the workers drive: the outbox and delivery attempts
//     (ClaimDelivery, FinishAttempt, ListDueDeliveries, GetDelivery,
//     RedriveDelivery), answers in progress (AnswersStartedBefore), and
//     crawl progress and steps (crawl.go);
//   - knowledge: chunks (CompleteIndexing writes them with COPY,
//     ReuseEmbeddings and LoadChunks read vectors, LoadChunks in a read-only
//     REPEATABLE READ transaction, SearchChunks is the full-text search),
//     the statements that move a source through indexing (IndexingCurrent,
//     BeginIndexing, FailIndexing, StalledSources, SourcesIndexedOtherwise),
//     DeleteSource, which bumps the agent's knowledge version in the same
//     statement, and the read of an uploaded file's body in
//     SourceForIndexing.
//
// Exceptions, each for its reason:
//   - CreateAgent is pgx although agents are gorm's: its INSERT claims the
//     service-wide widget slug with a condition in SQL (createAgentSQL),
//     returns the seq and slug it assigned, and runs again without the
//     claim when another pod's agent won the slug; one hand-written
//     statement says that more plainly than gorm's Create with expressions.
//   - MessageTrace is pgx although message reads are gorm's: it reads the
//     trace column alone, raw JSON that messageRow does not map.
//   - CreateSource and RequestReindex write tables that are otherwise pgx's
//     (an uploaded file's body in source_files; the end of a superseded
//     crawl in crawl_progress) with gorm, inside the gorm transaction that
//     writes their source row, so both commit or neither does.
package postgres
