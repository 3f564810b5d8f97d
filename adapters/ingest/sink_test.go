package ingest

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/domain"
)

func TestTextSink(t *testing.T) {
	tests := []struct {
		name   string
		writes []string // through Write, as a process's output comes
		max    int
		want   string
		over   bool
	}{
		{name: "line endings", writes: []string{"a\r\nb\rc\fd\u2028e"}, want: "a\nb\nc\nd\ne"},
		{name: "crlf split between writes", writes: []string{"a\r", "\nb"}, want: "a\nb"},
		{name: "blank lines collapse", writes: []string{"\n\n a\n\n\n\n b \n \n"}, want: " a\n\n b"},
		{name: "trailing spaces dropped, inner kept", writes: []string{"a \t\u00a0\nb\u3000c  \n"}, want: "a\nb\u3000c"},
		{name: "NUL, controls and invalid bytes dropped", writes: []string{"a\x00b\x01\x7fc\xffd\xc3(e\u0085"}, want: "abcd(e"},
		{name: "zero-width and soft hyphens dropped", writes: []string{"a\ufeffb\u200bc\u00add"}, want: "abcd"},
		{name: "a character split between writes", writes: []string{"caf\xc3", "\xa9 \xe2\x82", "\xac"}, want: "café €"},
		{name: "an incomplete character at the end", writes: []string{"ok\xe2\x82"}, want: "ok"},
		{name: "at the cap", writes: []string{"abc\n\nde"}, max: 7, want: "abc\n\nde"},
		{name: "one byte over the cap", writes: []string{"abc\n\ndef"}, max: 7, over: true},
		{name: "spaces past the cap that lead nowhere", writes: []string{"ab" + strings.Repeat(" ", 100) + "\ncd"}, max: 8, want: "ab\ncd"},
		{name: "spaces past the cap before text", writes: []string{"ab" + strings.Repeat(" ", 100) + "cd"}, max: 8, over: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			max := tt.max
			if max == 0 {
				max = 1 << 20
			}
			s := newTextSink(max)
			var err error
			for _, w := range tt.writes {
				if _, err = s.Write([]byte(w)); err != nil {
					break
				}
			}
			if err == nil {
				err = s.Close()
			}
			if tt.over {
				var ve *domain.ValidationError
				if !errors.As(err, &ve) || err.Error() != "file: the file's text is over "+size(int64(max))+"; split it into smaller files" {
					t.Fatalf("err = %v, want the text cap's message", err)
				}
				if _, again := s.Write([]byte("x")); again == nil {
					t.Error("a write after the cap was accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.String(); got != tt.want || !utf8.ValidString(got) {
				t.Errorf("text = %q, want %q", got, tt.want)
			}
		})
	}
}
