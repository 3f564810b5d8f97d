package relay

import (
	"errors"
	"strconv"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

// FuzzParseEventID feeds ParseEventID what clients send as Last-Event-ID.
// It never panics; "" is no position; anything else is either exactly an
// id this service writes ("<messageId>:<seq>", seq from 1, no leading
// zero), parsed back to the same text, or a validation error naming
// lastEventId, the 400 a client is shown.
func FuzzParseEventID(f *testing.F) {
	valid := "msg_" + "0123456789abcdefghjkmnpqrs"
	for _, seed := range []string{
		"", valid + ":1", valid + ":42", valid, valid + ":", valid + ":0", valid + ":-3", valid + ":07",
		valid + ":1:2", valid + ": 1", valid + ":+1", "msg_short:1", "ses_0123456789abcdefghjkmnpqrs:1",
		valid + ":99999999999999999999", valid + ":9223372036854775807", ":1", "\x00:1", valid + ":1\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, id string) {
		pos, err := ParseEventID(id)
		if id == "" {
			if pos != nil || err != nil {
				t.Fatalf(`ParseEventID("") = %+v, %v; want no position`, pos, err)
			}
			return
		}
		if err != nil {
			var verr *domain.ValidationError
			if pos != nil || !errors.As(err, &verr) || verr.Fields["lastEventId"] == "" || !errors.Is(err, domain.ErrInvalidInput) {
				t.Fatalf("ParseEventID(%q) = %+v, %v; want a validation error naming lastEventId", id, pos, err)
			}
			return
		}
		if pos == nil || pos.Seq < 1 || !domain.ValidID(domain.PrefixMessage, pos.MessageID) {
			t.Fatalf("ParseEventID(%q) = %+v", id, pos)
		}
		if back := pos.MessageID + ":" + strconv.Itoa(pos.Seq); back != id {
			t.Fatalf("ParseEventID(%q) = %+v, which writes %q", id, pos, back)
		}
	})
}
