package console

import (
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// waitingSince counts a waiting conversation from its handoff request,
// not its last activity, and the others from their last activity.
func TestWaitingSince(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		conv      domain.Conversation
		text, iso string
	}{
		{"asked 12 min ago, wrote just now", domain.Conversation{Status: domain.StatusHandoffRequested,
			HandoffRequestedAt: now.Add(-12 * time.Minute), LastActivityAt: now}, "waiting 12 min", "2026-11-28T11:48:00Z"},
		{"asked 2 h ago", domain.Conversation{Status: domain.StatusHandoffRequested,
			HandoffRequestedAt: now.Add(-2 * time.Hour), LastActivityAt: now.Add(-time.Minute)}, "waiting 2 h", "2026-11-28T10:00:00Z"},
		{"asked 3 h 5 min ago", domain.Conversation{Status: domain.StatusHandoffRequested,
			HandoffRequestedAt: now.Add(-3*time.Hour - 5*time.Minute), LastActivityAt: now}, "waiting 3 h 5 min", "2026-11-28T08:55:00Z"},
		{"asked 2 days ago", domain.Conversation{Status: domain.StatusHandoffRequested,
			HandoffRequestedAt: now.Add(-50 * time.Hour), LastActivityAt: now}, "waiting 2 days", "2026-11-26T10:00:00Z"},
		{"asked just now", domain.Conversation{Status: domain.StatusHandoffRequested,
			HandoffRequestedAt: now.Add(-10 * time.Second), LastActivityAt: now}, "waiting just now", "2026-11-28T11:59:50Z"},
		{"with a person: last activity", domain.Conversation{Status: domain.StatusHuman,
			HandoffRequestedAt: now.Add(-3 * time.Hour), LastActivityAt: now.Add(-5 * time.Minute)}, "5 min", "2026-11-28T11:55:00Z"},
		{"waiting without a request time: last activity", domain.Conversation{Status: domain.StatusHandoffRequested,
			LastActivityAt: now.Add(-7 * time.Minute)}, "7 min", "2026-11-28T11:53:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, iso, _ := waitingSince(tt.conv, now)
			if text != tt.text || iso != tt.iso {
				t.Fatalf("got %q at %s, want %q at %s", text, iso, tt.text, tt.iso)
			}
		})
	}
}
