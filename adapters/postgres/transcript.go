package postgres

import (
	"context"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.Transcript = (*Store)(nil)

// MessagesFrom returns up to limit of the conversation's messages in append
// order (seq), starting with messageID itself ("" from the first), for the
// replay of live streams. Returns domain.ErrNotFound unless the
// conversation belongs to the workspace and, when messageID is set, has
// that message.
func (s *Store) MessagesFrom(ctx context.Context, workspaceID, conversationID, messageID string, limit int) ([]domain.Message, error) {
	rows, err := s.messageRows(ctx, workspaceID, conversationID, messageID, true, max(limit, 1))
	if err != nil {
		return nil, dbError("messages from", err)
	}
	if len(rows) == 0 {
		// The message would be the first row: without rows it does not
		// exist here, or the conversation has no messages at all.
		if messageID != "" {
			return nil, domain.NotFound("message")
		}
		if err := s.checkEmptyMessagePage(ctx, workspaceID, conversationID, nil); err != nil {
			return nil, err
		}
	}
	out := make([]domain.Message, len(rows))
	for i, r := range rows {
		m, err := r.toDomain()
		if err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
}
