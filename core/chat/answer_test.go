package chat

import (
	"context"

	"github.com/conciergehq/concierge/core/domain"
)

// answerTurn runs one chat turn as the HTTP edge does: Start with the
// caller's context, then Run with a context the caller leaving does not
// cancel (the engine's hard time limit still applies).
func answerTurn(ctx context.Context, s *Service, req Request, emit Emit) (domain.Answer, error) {
	p, err := s.Start(ctx, req)
	if err != nil {
		return domain.Answer{}, err
	}
	return p.Run(context.WithoutCancel(ctx), emit)
}
