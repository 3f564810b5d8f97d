package wire

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/core/domain"
)

// List is the envelope of every list response.
type List[T any] struct {
	Data []T      `json:"data"`
	Meta ListMeta `json:"meta"`
}

// ListMeta carries pagination state.
type ListMeta struct {
	NextCursor *string `json:"nextCursor"`
	HasMore    bool    `json:"hasMore"`
}

// cursor is the JSON inside an opaque cursor. Scope binds it to the list and
// filters it was issued for, so it cannot be replayed against another list.
type cursor struct {
	V     int    `json:"v"`
	T     int64  `json:"t"`
	ID    string `json:"id"`
	Scope string `json:"s"`
}

// Page reads `limit` and `cursor` from the query. scope names the list and its
// filters (for example "conversations|agent=support"); idPrefix is the prefix
// of the ids the list returns, used to reject cursors that were not ours.
func Page(c *fiber.Ctx, scope, idPrefix string) (domain.PageRequest, error) {
	var req domain.PageRequest
	if raw := c.Query("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil {
			return req, domain.InvalidField("limit", "must be between 1 and 100")
		}
		if n == 0 {
			return req, domain.InvalidField("limit", "must be between 1 and 100")
		}
		req.Limit = n
	}
	limit, err := domain.ValidatePageLimit(req.Limit)
	if err != nil {
		return req, err
	}
	req.Limit = limit
	if raw := c.Query("cursor"); raw != "" {
		pos, err := decodeCursor(raw, scope, idPrefix)
		if err != nil {
			return req, err
		}
		req.After = &pos
	}
	return req, nil
}

func decodeCursor(raw, scope, idPrefix string) (domain.Position, error) {
	bad := domain.InvalidField("cursor", "is not a cursor issued by this API; pass meta.nextCursor unchanged")
	if len(raw) > 512 {
		return domain.Position{}, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return domain.Position{}, bad
	}
	var cur cursor
	if err := json.Unmarshal(b, &cur); err != nil || cur.V != 1 || cur.T <= 0 || !domain.ValidID(idPrefix, cur.ID) {
		return domain.Position{}, bad
	}
	if cur.Scope != scopeHash(scope) {
		return domain.Position{}, domain.InvalidField("cursor", "was issued for another list or other filters; use the same query parameters as the request that returned it")
	}
	return domain.Position{Time: time.UnixMicro(cur.T).UTC(), ID: cur.ID}, nil
}

func encodeCursor(pos domain.Position, scope string) string {
	b, _ := json.Marshal(cursor{V: 1, T: pos.Time.UnixMicro(), ID: pos.ID, Scope: scopeHash(scope)})
	return base64.RawURLEncoding.EncodeToString(b)
}

// scopeHash keeps filter values (which may be long) out of the cursor.
func scopeHash(scope string) string {
	sum := sha256.Sum256([]byte(scope))
	return hex.EncodeToString(sum[:8])
}

// NewList maps a domain page to the list envelope.
func NewList[T, D any](page domain.Page[D], scope string, toDTO func(D) T) List[T] {
	out := List[T]{Data: make([]T, 0, len(page.Items)), Meta: ListMeta{HasMore: page.HasMore}}
	for _, item := range page.Items {
		out.Data = append(out.Data, toDTO(item))
	}
	if page.HasMore && page.Next != nil {
		next := encodeCursor(*page.Next, scope)
		out.Meta.NextCursor = &next
	}
	return out
}
