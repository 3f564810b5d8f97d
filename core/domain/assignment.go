package domain

import "time"

// AssigneeChange is one change of who owns a conversation, applied by the
// store in one conditional statement so concurrent changes serialize on the
// conversation's row.
type AssigneeChange struct {
	WorkspaceID    string
	ConversationID string
	// AssigneeID is the member the conversation goes to; "" unassigns.
	AssigneeID string
	// TakeOver makes the change a member's claim of a conversation a person
	// already answers: it applies only while the conversation is HUMAN and
	// not held by another member. A take-over from any other state is a
	// move of the lifecycle (StatusChange.AssigneeID), with its notice.
	TakeOver bool
	// Report, when not nil, builds the deliveries of the change from the
	// conversation as the change left it (AssignedDeliveries); the store
	// writes them in the change's transaction, and only when the assignee
	// changed.
	Report func(after Conversation) []Delivery
	// Choose, when not nil, makes the change the system's auto-assignment:
	// the store serialises it with every other auto-assignment of the
	// workspace, reads the candidates (AssignCandidate, available members
	// with their open conversations) and assigns the conversation to the
	// member Choose names, only while the conversation waits unassigned in
	// HANDOFF_REQUESTED, stamping that member's turn with At. Choose
	// returns "" when nobody fits: nothing changes. AssigneeID is ignored.
	Choose func(candidates []AssignCandidate) string
	// At is the time of an auto-assignment, the member's new turn.
	At time.Time
}

// AssignCandidate is a member auto-assignment may pick.
type AssignCandidate struct {
	UserID    string
	Role      MemberRole
	Available bool
	// Open counts the conversations assigned to the member that a person
	// handles now (HANDOFF_REQUESTED or HUMAN).
	Open int
	// LastAutoAssignedAt is when the member was last given a conversation
	// by auto-assignment; zero for never.
	LastAutoAssignedAt time.Time
}

// HeldByOther reports whether a member other than userID holds conv, so
// that userID may not take it over. A RESOLVED conversation's assignee
// holds it no more: the case is closed, and whoever reopens it by taking
// it over becomes its assignee.
func (c Conversation) HeldByOther(userID string) bool {
	return c.AssigneeID != "" && c.AssigneeID != userID && c.Status != StatusResolved
}

// HeldByOther is the conflict of a take-over of a conversation another
// member holds: its details name the holder, so the loser can see who won.
func HeldByOther(assigneeID string) error {
	return &ConflictError{
		Message: "the conversation is assigned to another member",
		Details: map[string]string{"assigneeId": assigneeID},
	}
}
