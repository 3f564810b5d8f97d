package wire

import (
	"encoding/base64"
	"encoding/binary"
	"hash/fnv"
	"strconv"
	"strings"
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

// A cursor is base64url of: a version byte, the position's time in unix
// microseconds (8 bytes), a 64-bit tag of the list and filters it was issued
// for (so it cannot be replayed against another list), and the position's id.
// Binary rather than JSON: every page decodes one cursor and encodes another.
const (
	cursorVersion = 1
	cursorHeader  = 1 + 8 + 8
)

// Page reads `limit` and `cursor` from the query. scope names the list and its
// filters (for example "conversations|agent=support"); idPrefix is the prefix
// of the ids the list returns, used to reject cursors that were not ours.
func Page(c *fiber.Ctx, scope, idPrefix string) (domain.PageRequest, error) {
	var req domain.PageRequest
	limit, err := QueryLimit(c)
	if err != nil {
		return req, err
	}
	if req.Limit, err = domain.ValidatePageLimit(limit); err != nil {
		return req, err
	}
	if raw := c.Query("cursor"); raw != "" {
		pos, err := decodeCursor(raw, scope, idPrefix)
		if err != nil {
			return req, err
		}
		req.After = &pos
	}
	return req, nil
}

// QueryLimit reads the optional `limit` query parameter, 0 when it is
// absent. 0 would mean "the default" to the domain; sent, it is out of
// range like any other number the domain refuses.
func QueryLimit(c *fiber.Ctx) (int, error) {
	raw := c.Query("limit")
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n == 0 {
		return 0, domain.InvalidField("limit", "must be between 1 and 100")
	}
	return n, nil
}

// KeyPage reads `limit` and `cursor` for a list ordered by a unique key
// rather than by time (saved replies by shortcut): the cursor carries the
// last key of the previous page, which valid must accept. An absent limit
// is the default one.
func KeyPage(c *fiber.Ctx, scope string, valid func(string) bool) (limit int, after string, err error) {
	if limit, err = QueryLimit(c); err != nil {
		return 0, "", err
	}
	if limit, err = domain.ValidatePageLimit(limit); err != nil {
		return 0, "", err
	}
	if raw := c.Query("cursor"); raw != "" {
		pos, err := decodeCursorWith(raw, scope, valid)
		if err != nil {
			return 0, "", err
		}
		after = pos.ID
	}
	return limit, after, nil
}

// keyCursorTime is the time key cursors carry: the layout needs a positive
// one, and a key list has no time to give.
var keyCursorTime = time.UnixMicro(1)

// NewKeyList maps a page of a key-ordered list (see KeyPage) to the list
// envelope; page.Next.ID is the last key.
func NewKeyList[T, D any](page domain.Page[D], scope string, toDTO func(D) T) List[T] {
	if page.Next != nil {
		page.Next = &domain.Position{Time: keyCursorTime, ID: page.Next.ID}
	}
	return NewList(page, scope, toDTO)
}

func decodeCursor(raw, scope, idPrefix string) (domain.Position, error) {
	return decodeCursorWith(raw, scope, func(id string) bool { return domain.ValidID(idPrefix, id) })
}

func decodeCursorWith(raw, scope string, validID func(string) bool) (domain.Position, error) {
	bad := func() error {
		return domain.InvalidField("cursor", "is not a cursor issued by this API; pass meta.nextCursor unchanged")
	}
	// The decoder skips \r and \n even in Strict mode, which would let one
	// cursor be spelled many ways (found by FuzzCursor); none is ever issued.
	if len(raw) > 256 || strings.ContainsAny(raw, "\r\n") {
		return domain.Position{}, bad()
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(raw) // Strict: one encoding per cursor
	if err != nil || len(b) <= cursorHeader || b[0] != cursorVersion {
		return domain.Position{}, bad()
	}
	micros := int64(binary.BigEndian.Uint64(b[1:9]))
	id := string(b[cursorHeader:])
	if micros <= 0 || !validID(id) {
		return domain.Position{}, bad()
	}
	if binary.BigEndian.Uint64(b[9:17]) != scopeTag(scope) {
		return domain.Position{}, domain.InvalidField("cursor", "was issued for another list or other filters; use the same query parameters as the request that returned it")
	}
	return domain.Position{Time: time.UnixMicro(micros).UTC(), ID: id}, nil
}

func encodeCursor(pos domain.Position, scope string) string {
	b := make([]byte, cursorHeader, cursorHeader+len(pos.ID))
	b[0] = cursorVersion
	binary.BigEndian.PutUint64(b[1:9], uint64(pos.Time.UnixMicro()))
	binary.BigEndian.PutUint64(b[9:17], scopeTag(scope))
	b = append(b, pos.ID...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// scopeTag fingerprints a list and its filters. It guards against mistakes,
// not attackers: a forged cursor can only move within the caller's own
// workspace, which every query is scoped to anyway.
func scopeTag(scope string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(scope))
	return h.Sum64()
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
