// Package memory keeps conversations and their messages in memory, by the
// rules of the PostgreSQL store, for unit tests of core packages: fast, no
// database. The contract suite in core/conversation/conversationtest runs
// against both, so the two cannot drift apart. It is not meant for
// production: nothing is persisted and nothing is ever freed.
package memory
