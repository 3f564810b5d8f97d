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
	q := s.db.WithContext(ctx).Where("workspace_id = ? AND conversation_id = ?", workspaceID, conversationID)
	if messageID != "" {
		q = q.Where("seq >= (SELECT m.seq FROM messages AS m WHERE m.workspace_id = ? AND m.conversation_id = ? AND m.id = ?)",
			workspaceID, conversationID, messageID)
	}
	var rows []messageRow
	if err := q.Order("seq").Limit(max(limit, 1)).Find(&rows).Error; err != nil {
		return nil, dbError("messages from", err)
	}
	if len(rows) == 0 {
		// The message would be the first row: without rows it does not
		// exist here, or the conversation has no messages at all.
		if messageID != "" {
			return nil, domain.NotFound("message")
		}
		var found bool
		err := s.db.WithContext(ctx).Raw("SELECT EXISTS (SELECT 1 FROM conversations WHERE workspace_id = ? AND id = ?)",
			workspaceID, conversationID).Scan(&found).Error
		if err != nil {
			return nil, dbError("messages from: check conversation", err)
		}
		if !found {
			return nil, domain.NotFound("conversation")
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
