package domain

import (
	"errors"
	"strings"
	"testing"
)

func TestTextProblem(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"empty", "", ""},
		{"ASCII", "Where is my order?", ""},
		{"every plane", "é 送料 📦 \t\n", ""},
		{"NUL", "a\x00b", "must not contain NUL characters"},
		{"NUL alone", "\x00", "must not contain NUL characters"},
		{"lone continuation byte", "a\x80b", "must be valid UTF-8 text"},
		{"truncated sequence", "caf\xc3", "must be valid UTF-8 text"},
		{"overlong encoding", "\xc0\xaf", "must be valid UTF-8 text"},
		{"surrogate half", "\xed\xa0\x80", "must be valid UTF-8 text"},
		{"invalid beats NUL", "\xff\x00", "must be valid UTF-8 text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TextProblem(tt.text); got != tt.want {
				t.Errorf("TextProblem(%q) = %q, want %q", tt.text, got, tt.want)
			}
			err := ValidateText("field", tt.text)
			var verr *ValidationError
			if (tt.want == "") != (err == nil) || (err != nil && (!errors.As(err, &verr) || verr.Fields["field"] != tt.want)) {
				t.Errorf("ValidateText = %#v, want a ValidationError on field with %q", err, tt.want)
			}
		})
	}
}

func TestValidateModel(t *testing.T) {
	tests := []struct {
		model string
		ok    bool
	}{
		{"", true},
		{"local", true},
		{"openai", true},
		{"openai:gpt-4o-mini", true},
		{"openai:meta-llama/Llama-3.1-8B-Instruct", true},
		{"openai:llama3:8b", true},
		{"gpt-4o", false},           // a model without its provider used to be accepted, then ignored
		{"anthropic:claude", false}, // no such provider
		{"local:big", false},        // the embedded model has no variants
		{"openai:", false},
		{"openai:-leading-dash", false},
		{"openai:has space", false},
		{"openai:" + strings.Repeat("a", 100), false},
	}
	for _, tt := range tests {
		c := AgentConfig{Model: tt.model}
		err := c.Validate()
		if (err == nil) != tt.ok {
			t.Errorf("model %q: err = %v, want ok %v", tt.model, err, tt.ok)
		}
		var verr *ValidationError
		if err != nil && (!errors.As(err, &verr) || verr.Fields["model"] == "") {
			t.Errorf("model %q: err = %#v, want a ValidationError on model", tt.model, err)
		}
	}
}
