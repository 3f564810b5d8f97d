package domain

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestAgentConfigWidgetSettings(t *testing.T) {
	tests := []struct {
		name      string
		config    AgentConfig
		wantField string // "" when valid
		check     func(t *testing.T, c AgentConfig)
	}{
		{name: "defaults", check: func(t *testing.T, c AgentConfig) {
			if c.PrimaryColor != DefaultPrimaryColor || c.AvatarURL != "" || c.AllowedOrigins != nil {
				t.Fatalf("defaults: %q %q %v", c.PrimaryColor, c.AvatarURL, c.AllowedOrigins)
			}
		}},
		{name: "colour is lowercased", config: AgentConfig{PrimaryColor: " #AbCdEf "}, check: func(t *testing.T, c AgentConfig) {
			if c.PrimaryColor != "#abcdef" {
				t.Fatalf("PrimaryColor = %q", c.PrimaryColor)
			}
		}},
		{name: "short colour", config: AgentConfig{PrimaryColor: "#fff"}, wantField: "primaryColor"},
		{name: "named colour", config: AgentConfig{PrimaryColor: "red"}, wantField: "primaryColor"},
		{name: "colour with CSS", config: AgentConfig{PrimaryColor: "#000000;background:url(x)"}, wantField: "primaryColor"},
		{name: "https avatar", config: AgentConfig{AvatarURL: "https://cdn.example.com/a.png?size=64"}, check: func(t *testing.T, c AgentConfig) {
			if c.AvatarURL != "https://cdn.example.com/a.png?size=64" {
				t.Fatalf("AvatarURL = %q", c.AvatarURL)
			}
		}},
		{name: "http avatar is mixed content", config: AgentConfig{AvatarURL: "http://cdn.example.com/a.png"}, wantField: "avatarUrl"},
		{name: "javascript avatar", config: AgentConfig{AvatarURL: "javascript:alert(1)"}, wantField: "avatarUrl"},
		{name: "relative avatar", config: AgentConfig{AvatarURL: "/a.png"}, wantField: "avatarUrl"},
		{name: "avatar too long", config: AgentConfig{AvatarURL: "https://example.com/" + strings.Repeat("a", 2048)}, wantField: "avatarUrl"},
		{name: "origins are normalised and deduplicated", config: AgentConfig{AllowedOrigins: []string{
			"https://WWW.Example.com", "https://www.example.com/", "http://localhost:3000", "https://[::1]:8443",
		}}, check: func(t *testing.T, c AgentConfig) {
			want := []string{"https://www.example.com", "http://localhost:3000", "https://[::1]:8443"}
			if !slices.Equal(c.AllowedOrigins, want) {
				t.Fatalf("AllowedOrigins = %q, want %q", c.AllowedOrigins, want)
			}
		}},
		{name: "origin with a path", config: AgentConfig{AllowedOrigins: []string{"https://example.com/app"}}, wantField: "allowedOrigins"},
		{name: "origin with a query", config: AgentConfig{AllowedOrigins: []string{"https://example.com?x=1"}}, wantField: "allowedOrigins"},
		{name: "origin without a scheme", config: AgentConfig{AllowedOrigins: []string{"example.com"}}, wantField: "allowedOrigins"},
		{name: "ftp origin", config: AgentConfig{AllowedOrigins: []string{"ftp://example.com"}}, wantField: "allowedOrigins"},
		{name: "wildcard origin", config: AgentConfig{AllowedOrigins: []string{"https://*.example.com"}}, wantField: "allowedOrigins"},
		{name: "header injection", config: AgentConfig{AllowedOrigins: []string{"https://a.com; script-src *"}}, wantField: "allowedOrigins"},
		{name: "quoted keyword", config: AgentConfig{AllowedOrigins: []string{"'none'"}}, wantField: "allowedOrigins"},
		{name: "bad port", config: AgentConfig{AllowedOrigins: []string{"https://example.com:99999"}}, wantField: "allowedOrigins"},
		{name: "user info", config: AgentConfig{AllowedOrigins: []string{"https://user@example.com"}}, wantField: "allowedOrigins"},
		{name: "too many origins", config: AgentConfig{AllowedOrigins: slices.Repeat([]string{"https://example.com"}, 21)}, wantField: "allowedOrigins"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.config
			err := c.Validate()
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				tt.check(t, c)
				return
			}
			var verr *ValidationError
			if !errors.As(err, &verr) || verr.Fields[tt.wantField] == "" {
				t.Fatalf("Validate = %v, want a ValidationError on %s", err, tt.wantField)
			}
		})
	}
}

func TestWidgetAddress(t *testing.T) {
	a := Agent{ID: NewID(PrefixAgent), Slug: "support", WidgetSlug: "support"}
	if a.WidgetAddress() != "support" {
		t.Fatalf("claimed address = %q", a.WidgetAddress())
	}
	a.WidgetSlug = ""
	if a.WidgetAddress() != a.ID {
		t.Fatalf("unclaimed address = %q, want the id", a.WidgetAddress())
	}
	if ValidateSlug(a.ID) == nil {
		t.Fatal("an agent id must never be a valid slug, or addresses could collide")
	}
}

func TestNewFeedback(t *testing.T) {
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name, rating, comment string
		want                  *Feedback
		wantField             string
	}{
		{name: "up", rating: "up", want: &Feedback{Rating: RatingUp, UpdatedAt: now}},
		{name: "down with a comment", rating: "down", comment: "  wrong price  ", want: &Feedback{Rating: RatingDown, Comment: "wrong price", UpdatedAt: now}},
		{name: "clear", rating: ""},
		{name: "clear with a comment", rating: "", comment: "hm", wantField: "comment"},
		{name: "unknown rating", rating: "meh", wantField: "rating"},
		{name: "comment too long", rating: "down", comment: strings.Repeat("é", 1001), wantField: "comment"},
		{name: "comment at the limit", rating: "down", comment: strings.Repeat("é", 1000), want: &Feedback{Rating: RatingDown, Comment: strings.Repeat("é", 1000), UpdatedAt: now}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewFeedback(tt.rating, tt.comment, now)
			if tt.wantField != "" {
				var verr *ValidationError
				if !errors.As(err, &verr) || verr.Fields[tt.wantField] == "" {
					t.Fatalf("err = %v, want a ValidationError on %s", err, tt.wantField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
				t.Fatalf("NewFeedback = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseRatingFilter(t *testing.T) {
	for _, ok := range []string{"", "up", "down"} {
		if _, err := ParseRatingFilter(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"UP", "none", "1"} {
		if _, err := ParseRatingFilter(bad); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%q: err = %v, want ErrInvalidInput", bad, err)
		}
	}
	if !errors.Is(ErrFeedbackNotAnswer, ErrInvalidInput) {
		t.Fatal("ErrFeedbackNotAnswer must be an ErrInvalidInput (400)")
	}
}
