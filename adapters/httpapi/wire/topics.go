package wire

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/unanswered"
)

// topicCursor maps a topic position to the cursor layout (a time and an
// id): the last activity for the recent order; for the largest order, the
// count carried as microseconds after the epoch (plus one: the layout
// wants a positive time). The order is in the cursor's scope, so neither
// is read as the other.
func topicCursor(order domain.TopicOrder, p domain.TopicPosition) domain.Position {
	if order == domain.TopicsLargest {
		return domain.Position{Time: time.UnixMicro(int64(p.Count) + 1), ID: p.ID}
	}
	return domain.Position{Time: p.LastSeenAt, ID: p.ID}
}

func topicPosition(order domain.TopicOrder, p domain.Position) *domain.TopicPosition {
	if order == domain.TopicsLargest {
		return &domain.TopicPosition{Count: int(p.Time.UnixMicro() - 1), ID: p.ID}
	}
	return &domain.TopicPosition{LastSeenAt: p.Time, ID: p.ID}
}

// TopicPage is a topic page as the list envelope pages it.
func TopicPage(order domain.TopicOrder, p domain.TopicPage) domain.Page[domain.UnansweredTopic] {
	out := domain.Page[domain.UnansweredTopic]{Items: p.Items, HasMore: p.HasMore}
	if p.Next != nil {
		next := topicCursor(order, *p.Next)
		out.Next = &next
	}
	return out
}

// TopicListRequest reads the list's query (order, status, limit, cursor)
// and the scope its cursors are issued for.
func TopicListRequest(c *fiber.Ctx, slug string) (unanswered.ListRequest, string, error) {
	r := unanswered.ListRequest{AgentSlug: slug, Order: domain.TopicOrder(strings.Clone(c.Query("order"))),
		Status: domain.TopicStatus(strings.ToUpper(strings.Clone(c.Query("status"))))}
	if r.Order == "" {
		r.Order = domain.TopicsRecent
	}
	if r.Order != domain.TopicsRecent && r.Order != domain.TopicsLargest {
		return r, "", domain.InvalidField("order", "must be recent or largest")
	}
	scope := "unanswered-topics|agent=" + slug + "|order=" + string(r.Order) + "|status=" + string(r.Status)
	page, err := Page(c, scope, domain.PrefixTopic)
	if err != nil {
		return r, "", err
	}
	r.Limit = page.Limit
	if page.After != nil {
		r.After = topicPosition(r.Order, *page.After)
	}
	return r, scope, nil
}
