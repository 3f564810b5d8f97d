package memindex

import (
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// maxWordBytes drops longer "words": base64 blobs, hashes and long URLs
// would only bloat the dictionary, and nobody searches for them by typing.
const maxWordBytes = 64

// forEachWord calls fn with each word of s, lowercased: a maximal run of
// Unicode letters, digits and combining marks. The slice handed to fn is a
// buffer reused for the next word; the grown buffer is returned so callers
// can reuse it across calls.
func forEachWord(s string, buf []byte, fn func(word []byte)) []byte {
	buf = buf[:0]
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
				if len(buf) <= maxWordBytes {
					buf = append(buf, c)
				}
			case 'A' <= c && c <= 'Z':
				if len(buf) <= maxWordBytes {
					buf = append(buf, c+'a'-'A')
				}
			default:
				if len(buf) > 0 {
					if len(buf) <= maxWordBytes {
						fn(buf)
					}
					buf = buf[:0]
				}
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) {
			// Appending may push a word past the limit by a few bytes; it is
			// then dropped whole at its end, like any over-long word.
			if len(buf) <= maxWordBytes {
				buf = utf8.AppendRune(buf, unicode.ToLower(r))
			}
			continue
		}
		if len(buf) > 0 {
			if len(buf) <= maxWordBytes {
				fn(buf)
			}
			buf = buf[:0]
		}
	}
	if len(buf) > 0 && len(buf) <= maxWordBytes {
		fn(buf)
	}
	return buf
}

// IsStopword reports whether a lowercase word is one the index leaves out
// (Snowball's English stopwords: "the", "which", "anything").
func IsStopword(word string) bool { return english.IsStopWord(word) }

// termOf returns the index term of a lowercase word: its Snowball English
// stem, or "" for a stopword. The snowball package keeps no shared mutable
// state (each call works on its own SnowballWord), so it is safe for
// concurrent searches.
func termOf(word string) string {
	if english.IsStopWord(word) {
		return ""
	}
	// stemStopWords=true skips the library's second stopword check.
	return english.Stem(word, true)
}
