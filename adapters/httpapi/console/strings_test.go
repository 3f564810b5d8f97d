package console

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

// Every key the handlers name is in the string table (templates are
// checked by rendering them: tr fails on a missing key).
func TestHandlersNameOnlyKnownTexts(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	key := regexp.MustCompile(`mustText\("([^"]+)"[,)]`)
	n := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range key.FindAllStringSubmatch(string(src), -1) {
			n++
			if _, ok := text[m[1]]; !ok {
				t.Errorf("%s: no text for %q", f, m[1])
			}
		}
	}
	// Require names the permission's text by its id.
	for _, p := range []domain.Permission{domain.PermConversations, domain.PermAgents, domain.PermSettings, domain.PermMembers, domain.PermSecrets, domain.PermSavedReplies} {
		if _, ok := text["perm."+string(p)]; !ok {
			t.Errorf("permission %q: no text", p)
		}
	}
	for done, k := range notices {
		if _, ok := text[k]; !ok {
			t.Errorf("notice %q: no text for %q", done, k)
		}
	}
	if n < 20 {
		t.Fatalf("found only %d keys: is the pattern still right?", n)
	}
}

func TestSafeNext(t *testing.T) {
	for next, want := range map[string]string{
		"/console":                 "/console",
		"/console/w/ws_1/agents":   "/console/w/ws_1/agents",
		"/console?x=//y":           "/console?x=//y",
		"/console/w/ws_1//agents":  "/console",
		"/console%2F%2Fevil.com":   "/console",
		"/console/%5C%5Cevil.com":  "/console",
		"https:/console":           "/console",
		"/console/%zz":             "/console",
		"/console/%25252F%25252Fx": "/console",
	} {
		if got := safeNext(next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}
