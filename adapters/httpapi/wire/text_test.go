package wire

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/core/domain"
)

type textDTO struct {
	Name   string            `json:"name"`
	Tags   []string          `json:"tags"`
	Nested *textNested       `json:"nested"`
	Labels map[string]string `json:"labels"`
}

type textNested struct {
	Note string `json:"note"`
}

// decodeBody runs Decoder.Decode on body inside a real fiber handler and
// returns its error.
func decodeBody(t *testing.T, body string) error {
	t.Helper()
	d := NewDecoder()
	var got error
	app := fiber.New()
	app.Post("/", func(c *fiber.Ctx) error {
		var dto textDTO
		got = d.Decode(c, &dto, false)
		return nil
	})
	req := httptest.NewRequest("POST", "/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return got
}

func TestDecodeAppliesTheTextRule(t *testing.T) {
	tests := []struct {
		name, body, field string
	}{
		{"NUL at the top", `{"name":"a\u0000b"}`, "name"},
		{"NUL in a list", `{"tags":["ok","b\u0000"]}`, "tags[1]"},
		{"NUL in a nested object", `{"nested":{"note":"\u0000"}}`, "nested.note"},
		{"NUL in a map value", `{"labels":{"k":"v\u0000"}}`, "labels.k"},
		{"NUL in a map key", `{"labels":{"k\u0000":"v"}}`, "labels"},
		{"raw bytes not UTF-8", "{\"name\":\"caf\xc3\"}", ""},
		{"not UTF-8 outside strings", "{\"name\":\"x\"}\xff", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := decodeBody(t, tt.body)
			var verr *domain.ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("err = %#v, want a ValidationError", err)
			}
			if tt.field != "" && verr.Fields[tt.field] == "" {
				t.Errorf("fields %v do not name %s", verr.Fields, tt.field)
			}
		})
	}
	// An escaped backslash before u0000 is the text \u0000, not a NUL.
	if err := decodeBody(t, `{"name":"C:\\u0000 is a path","tags":["é 📦"]}`); err != nil {
		t.Errorf("good text refused: %v", err)
	}
}
