package domain

// AssigneeChange is one change of who owns a conversation, applied by the
// store in one conditional statement so concurrent changes serialize on the
// conversation's row.
type AssigneeChange struct {
	WorkspaceID    string
	ConversationID string
	// AssigneeID is the member the conversation goes to; "" unassigns.
	AssigneeID string
	// TakeOver makes the change apply only while nobody else holds the
	// conversation, and moves it to HUMAN: a member taking a conversation
	// answers it. A resolved conversation is not taken over: it is
	// reopened first, so a take-over never silently revives a closed case.
	TakeOver bool
}

// TakeOverFrom lists the states a take-over moves from. HUMAN is among
// them because a conversation someone else released (unassigned) while a
// person answered it can be taken by another member.
var TakeOverFrom = []ConversationStatus{StatusAI, StatusHandoffRequested, StatusHuman}

// HeldByOther is the conflict of a take-over of a conversation another
// member holds: its details name the holder, so the loser can see who won.
func HeldByOther(assigneeID string) error {
	return &ConflictError{
		Message: "the conversation is assigned to another member",
		Details: map[string]string{"assigneeId": assigneeID},
	}
}
