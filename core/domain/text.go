package domain

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// The text rule. Every piece of text that comes from outside (request
// bodies, form fields, headers, identity payloads) must be valid UTF-8
// without NUL characters before anything is stored: PostgreSQL's text type
// refuses both, and what it refuses mid-transaction would otherwise surface
// as a 500 after part of a request's work was done. Edges apply it to
// everything they decode; use cases apply it to fields that reach them
// another way. One rule, one wording, so every route answers alike.

// TextProblem says what is wrong with s under the text rule, or "" when
// nothing is.
func TextProblem(s string) string {
	if !utf8.ValidString(s) {
		return "must be valid UTF-8 text"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "must not contain NUL characters"
	}
	return ""
}

// ValidateText applies the text rule to one field, returning a
// ValidationError naming it (by its wire name) when it breaks the rule.
func ValidateText(field, s string) error {
	if p := TextProblem(s); p != "" {
		return InvalidField(field, p)
	}
	return nil
}

// ValidateMessageText checks a message written by a person: the text rule,
// required, not blank, at most maxChars characters. The message text matches
// the spec's wording. It runs before anything of the message is stored, so an
// oversize message costs its sender a 400, not us its storage.
func ValidateMessageText(text string, maxChars int) error {
	if err := ValidateText("message", text); err != nil {
		return err
	}
	if strings.TrimSpace(text) == "" {
		return &ValidationError{Message: "message is required", Fields: map[string]string{"message": "is required"}}
	}
	if utf8.RuneCountInString(text) > maxChars {
		return &ValidationError{Message: "message is too long", Fields: map[string]string{"message": "must be at most " + strconv.Itoa(maxChars) + " characters"}}
	}
	return nil
}

// textField is a field's wire name and value, for validating several
// fields under the text rule in a fixed order.
type textField struct{ name, value string }

// validateTexts applies the text rule to fields in order; the first that
// breaks it is the error.
func validateTexts(fields ...textField) error {
	for _, f := range fields {
		if err := ValidateText(f.name, f.value); err != nil {
			return err
		}
	}
	return nil
}
