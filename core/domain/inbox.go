package domain

// InboxView is one tab of the human inbox: which conversations it holds
// and in which order.
type InboxView string

// Inbox views. Needs holds the conversations waiting for a person
// (HANDOFF_REQUESTED), oldest request first (Conversation.HandoffRequestedAt)
// so the longest wait is on top, however much the visitor wrote since; Mine those the member owns, Unassigned those nobody owns, and Open
// all of them, among the conversations a person handles
// (HANDOFF_REQUESTED or HUMAN); Resolved the finished ones. All but Needs
// are newest activity first.
const (
	InboxNeeds      InboxView = "needs"
	InboxMine       InboxView = "mine"
	InboxUnassigned InboxView = "unassigned"
	InboxOpen       InboxView = "open"
	InboxResolved   InboxView = "resolved"
)

// InboxViews lists the views in the order the inbox shows its tabs.
var InboxViews = []InboxView{InboxNeeds, InboxMine, InboxUnassigned, InboxOpen, InboxResolved}

// Valid reports whether v is one of the inbox views.
func (v InboxView) Valid() bool {
	for _, x := range InboxViews {
		if v == x {
			return true
		}
	}
	return false
}

// Oldest reports whether the view lists the longest waiting first.
func (v InboxView) Oldest() bool { return v == InboxNeeds }

// InboxQuery selects a page of one inbox view of a workspace.
type InboxQuery struct {
	View InboxView
	// UserID is the member asking: the owner of the Mine view.
	UserID string
	// AgentID, when set, keeps only that agent's conversations.
	AgentID string
	// Query, when set, keeps the conversations whose contact or message
	// text contains it, as ConversationFilter.Query does.
	Query string
}

// InboxCountCap bounds each tab's count: counting stops there, so the tabs
// cost the same at a hundred thousand conversations as at a hundred, and
// the console shows "999+".
const InboxCountCap = 1000

// InboxCounts is how many conversations each view holds, each at most
// InboxCountCap (which means "at least that many").
type InboxCounts map[InboxView]int
