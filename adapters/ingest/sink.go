package ingest

import (
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// textSink receives a document's text as the extractor produces it and keeps
// it tidy as it goes: line endings normalised, control characters, NULs and
// invalid UTF-8 dropped, trailing spaces cut and runs of blank lines
// collapsed into one. It refuses to hold more than max bytes, so a file that
// expands past the text cap stops being read when it does, not after its
// whole text was built: the text is the one part of an extraction whose size
// the file does not bound.
//
// The result is valid UTF-8 without NULs (PostgreSQL text refuses NUL). Its
// buffer grows at most to max, and String hands it over without a copy.
type textSink struct {
	max int
	buf []byte
	err error

	// spaces is the whitespace after the last character of the line, kept
	// until more text follows (else it is trailing, and dropped); spaceLen
	// counts all of it, more than spaces holds once that is over the cap.
	spaces   []byte
	spaceLen int
	breaks   int  // line breaks since the last character written, at most 2
	cr       bool // the last rune was '\r', so a '\n' right after is the same break
	carry    []byte
}

func newTextSink(max int) *textSink { return &textSink{max: max} }

// overCap is the error of a text over the cap.
func overCap(max int) error {
	return invalid("the file's text is over %s; split it into smaller files", size(int64(max)))
}

// Len is the number of bytes kept so far.
func (s *textSink) Len() int { return len(s.buf) }

// Err is the first error: the text went over the cap.
func (s *textSink) Err() error { return s.err }

// String returns the text. The sink must not be written to afterwards.
func (s *textSink) String() string {
	if len(s.buf) == 0 {
		return ""
	}
	// The bytes are never written again: the same hand-over strings.Builder
	// does, without its doubling growth past the cap.
	return unsafe.String(&s.buf[0], len(s.buf))
}

// Write implements io.Writer for a process's output, which may split a
// UTF-8 sequence between two writes: an incomplete sequence at the end is
// held back for the next write.
func (s *textSink) Write(p []byte) (int, error) {
	n := len(p)
	if len(s.carry) > 0 {
		p = append(s.carry, p...)
		s.carry = nil
	}
	tail := len(p)
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				tail = i
			}
			break
		}
	}
	s.carry = append(s.carry, p[tail:]...)
	return n, s.writeString(string(p[:tail]))
}

// WriteString adds text, tidied. After an error it does nothing and
// returns the error again.
func (s *textSink) WriteString(t string) error {
	return s.writeString(t)
}

// Close drops an incomplete UTF-8 sequence left at the end, as any invalid
// bytes are dropped.
func (s *textSink) Close() error {
	s.carry = nil
	return s.err
}

func (s *textSink) writeString(t string) error {
	if s.err != nil {
		return s.err
	}
	for i := 0; i < len(t); {
		c := t[i]
		// Fast path: a run of printable ASCII other than space.
		if c > ' ' && c < 0x7f {
			j := i + 1
			for j < len(t) && t[j] > ' ' && t[j] < 0x7f {
				j++
			}
			if err := s.text(t[i:j]); err != nil {
				return err
			}
			s.cr = false
			i = j
			continue
		}
		r, n := rune(c), 1
		if c >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(t[i:])
		}
		i += n
		cr := s.cr
		s.cr = false
		switch r {
		case '\n':
			if !cr {
				s.lineBreak()
			}
			continue
		case '\r':
			s.cr = true
			s.lineBreak()
			continue
		case '\f', '\u2028', '\u2029': // page breaks, Unicode line separators
			s.lineBreak()
			continue
		case '\v', '\u00a0':
			r = ' '
		case '\ufeff', '\u200b', '\u00ad', utf8.RuneError: // BOMs, zero-width and soft hyphens, invalid bytes
			continue
		}
		if r != '\t' && unicode.IsControl(r) {
			continue
		}
		if unicode.IsSpace(r) {
			s.space(r)
			continue
		}
		if err := s.text(t[i-n : i]); err != nil {
			return err
		}
	}
	return nil
}

func (s *textSink) lineBreak() {
	s.spaces, s.spaceLen = s.spaces[:0], 0
	if len(s.buf) > 0 && s.breaks < 2 {
		s.breaks++
	}
}

func (s *textSink) space(r rune) {
	s.spaceLen += utf8.RuneLen(r)
	if s.spaceLen <= s.max {
		s.spaces = utf8.AppendRune(s.spaces, r)
	}
}

// text writes characters that are not whitespace, after the line breaks
// and spaces pending before them.
func (s *textSink) text(t string) error {
	need := s.breaks + s.spaceLen + len(t)
	if len(s.buf)+need > s.max {
		s.err = overCap(s.max)
		s.buf, s.spaces = nil, nil
		return s.err
	}
	if cap(s.buf)-len(s.buf) < need {
		grown := make([]byte, len(s.buf), min(max(2*cap(s.buf), len(s.buf)+need, 4096), s.max))
		copy(grown, s.buf)
		s.buf = grown
	}
	for ; s.breaks > 0; s.breaks-- {
		s.buf = append(s.buf, '\n')
	}
	s.buf = append(s.buf, s.spaces...)
	s.spaces, s.spaceLen = s.spaces[:0], 0
	s.buf = append(s.buf, t...)
	return nil
}
