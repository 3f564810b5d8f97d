package domain

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Saved reply limits (issue 17).
const (
	// MaxSavedReplyShortcut caps a shortcut's length: it is typed after "/"
	// in the composer, so it stays short.
	MaxSavedReplyShortcut = 32
	// MaxSavedReplyTitle caps a title's characters.
	MaxSavedReplyTitle = 100
	// MaxSavedRepliesPerWorkspace caps how many saved replies a workspace
	// keeps, so the composer's lookup and the settings list stay small.
	MaxSavedRepliesPerWorkspace = 500
)

// SavedReply is a canned answer a workspace's agents insert into a reply by
// typing "/" and its shortcut.
type SavedReply struct {
	ID          string
	WorkspaceID string
	// Shortcut is unique within the workspace: lowercase letters, digits and "-".
	Shortcut string
	Title    string
	Body     string
	// CreatedBy is the id of the user who created it, or "" when it was
	// created through the API or the user was removed.
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Validate checks shortcut, title and body, naming the first bad field by
// its wire name.
func (r SavedReply) Validate() error {
	if err := validateTexts(textField{"shortcut", r.Shortcut}, textField{"title", r.Title}, textField{"body", r.Body}); err != nil {
		return err
	}
	if err := ValidateSavedReplyShortcut(r.Shortcut); err != nil {
		return err
	}
	if strings.TrimSpace(r.Title) == "" {
		return InvalidField("title", "is required")
	}
	if utf8.RuneCountInString(r.Title) > MaxSavedReplyTitle {
		return InvalidField("title", "must be at most "+strconv.Itoa(MaxSavedReplyTitle)+" characters")
	}
	if strings.TrimSpace(r.Body) == "" {
		return InvalidField("body", "is required")
	}
	if utf8.RuneCountInString(r.Body) > MaxMessageLength {
		return InvalidField("body", "must be at most "+strconv.Itoa(MaxMessageLength)+" characters")
	}
	return nil
}

// ValidateSavedReplyShortcut checks a shortcut: 1 to 32 of lowercase ASCII
// letters, digits and "-". Upper case is refused rather than folded, so what
// an admin typed is what agents type after "/".
func ValidateSavedReplyShortcut(s string) error {
	if s == "" {
		return InvalidField("shortcut", "is required")
	}
	if len(s) > MaxSavedReplyShortcut {
		return InvalidField("shortcut", "must be at most "+strconv.Itoa(MaxSavedReplyShortcut)+" characters")
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return InvalidField("shortcut", "may contain only lowercase letters, digits and -")
		}
	}
	return nil
}
