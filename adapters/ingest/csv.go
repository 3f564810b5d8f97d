package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
)

// maxCSVRecordBytes caps one row of a .csv file. encoding/csv holds a whole
// row, and several words of bookkeeping per field, before it returns it: a
// row of a million empty fields would take tens of MB, a row at the cap
// about 15 MB.
const maxCSVRecordBytes = 256 << 10

// csv renders each data row as a paragraph of "header: value" lines, so a
// chunk holding a row is retrievable by any of its fields and readable
// without the header row. Empty values are left out.
func (e *Extractor) csv(ctx context.Context, body []byte, out *textSink) error {
	r, err := textReader(body, ".csv")
	if err != nil {
		return err
	}
	br := bufio.NewReaderSize(r, 64<<10)
	first, _ := br.Peek(64 << 10) // the first line, or enough of it
	if i := bytes.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	limit := &recordLimit{r: br, max: maxCSVRecordBytes}
	cr := csv.NewReader(limit)
	cr.Comma = sniffComma(string(first))
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	cr.ReuseRecord = true
	next := func() ([]string, error) {
		rec, err := cr.Read()
		limit.start = cr.InputOffset()
		return rec, err
	}

	header, err := next()
	if err == io.EOF {
		return invalid("the file has no text")
	}
	if err != nil {
		return csvError(err)
	}
	names := make([]string, len(header))
	for i, h := range header {
		names[i] = csvName(h, i)
	}
	rows := 0
	for {
		rec, err := next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return csvError(err)
		}
		rows++
		if rows > e.opts.MaxCSVRows {
			return invalid("the .csv file has more than %d rows; split it into smaller files", e.opts.MaxCSVRows)
		}
		if rows%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		wrote := false
		for i, v := range rec {
			v = oneLine(v)
			if v == "" {
				continue
			}
			name := ""
			if i < len(names) {
				name = names[i]
			} else {
				name = fmt.Sprintf("column %d", i+1)
			}
			for _, s := range []string{name, ": ", v, "\n"} {
				if err := out.WriteString(s); err != nil {
					return err
				}
			}
			wrote = true
		}
		if wrote {
			if err := out.WriteString("\n"); err != nil {
				return err
			}
		}
	}
	if rows == 0 {
		// A header and nothing else is still text worth indexing.
		return out.WriteString(strings.Join(names, ", "))
	}
	return nil
}

// errCSVRecord says a row went over maxCSVRecordBytes.
var errCSVRecord = invalid("the .csv file has a row over %s; check its quoting, or split long values", size(maxCSVRecordBytes))

// recordLimit fails a read once the row being read is over max bytes:
// start is where the row began (csv.Reader.InputOffset after the last row),
// read how much csv.Reader has taken in, a buffer ahead at most.
type recordLimit struct {
	r          io.Reader
	start, max int64
	read       int64
}

func (l *recordLimit) Read(p []byte) (int, error) {
	if l.read-l.start > l.max {
		return 0, errCSVRecord
	}
	n, err := l.r.Read(p)
	l.read += int64(n)
	return n, err
}

// sniffComma picks the delimiter that splits the first line most: spreadsheet
// exports in many locales use ';', and .csv files are often tab-separated.
func sniffComma(s string) rune {
	first, _, _ := strings.Cut(s, "\n")
	best, n := ',', strings.Count(first, ",")
	for _, c := range []rune{';', '\t', '|'} {
		if k := strings.Count(first, string(c)); k > n {
			best, n = c, k
		}
	}
	return best
}

// csvName makes a header cell safe to start a Markdown line: a leading
// '#', '>', '-', '+', '*', '=' or "1." would turn the line into a heading,
// quote or list item and change the chunker's view of the text.
func csvName(h string, i int) string {
	h = oneLine(h)
	if h == "" {
		return fmt.Sprintf("column %d", i+1)
	}
	if strings.ContainsAny(h[:1], "#>-+*=|`~") {
		return `\` + h
	}
	// "1. Name" or "1) Name" would open an ordered list.
	digits := strings.TrimLeft(h, "0123456789")
	if len(digits) < len(h) && (strings.HasPrefix(digits, ".") || strings.HasPrefix(digits, ")")) {
		return h[:len(h)-len(digits)] + `\` + digits
	}
	return h
}

func csvError(err error) error {
	if errors.Is(err, errCSVRecord) {
		return errCSVRecord
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return invalid("the .csv file is not valid CSV (line %d: %v); check its quoting", pe.StartLine, pe.Err)
	}
	return invalid("the .csv file cannot be read: %v", err)
}
