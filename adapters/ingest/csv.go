package ingest

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/conciergehq/concierge/core/domain"
)

// csv renders each data row as a paragraph of "header: value" lines, so a
// chunk holding a row is retrievable by any of its fields and readable
// without the header row. Empty values are left out.
func (e *Extractor) csv(ctx context.Context, body []byte) (domain.Document, error) {
	s, err := decodeText(body, ".csv")
	if err != nil {
		return domain.Document{}, err
	}
	r := csv.NewReader(strings.NewReader(s))
	r.Comma = sniffComma(s)
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	r.ReuseRecord = false

	header, err := r.Read()
	if err == io.EOF {
		return domain.Document{}, invalid("the file has no text")
	}
	if err != nil {
		return domain.Document{}, csvError(err)
	}
	names := make([]string, len(header))
	for i, h := range header {
		names[i] = csvName(h, i)
	}
	var b strings.Builder
	rows := 0
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return domain.Document{}, csvError(err)
		}
		rows++
		if rows > e.opts.MaxCSVRows {
			return domain.Document{}, invalid("the .csv file has more than %d rows; split it into smaller files", e.opts.MaxCSVRows)
		}
		if rows%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return domain.Document{}, err
			}
		}
		var block strings.Builder
		for i, v := range rec {
			v = oneLine(v)
			if v == "" {
				continue
			}
			name := fmt.Sprintf("column %d", i+1)
			if i < len(names) {
				name = names[i]
			}
			block.WriteString(name + ": " + v + "\n")
		}
		if block.Len() == 0 {
			continue
		}
		b.WriteString(block.String())
		b.WriteString("\n")
		if b.Len() > e.opts.MaxTextBytes {
			return domain.Document{}, invalid("the file's text is over %s; split it into smaller files", size(int64(e.opts.MaxTextBytes)))
		}
	}
	if rows == 0 {
		// A header and nothing else is still text worth indexing.
		b.WriteString(strings.Join(names, ", "))
	}
	return domain.Document{Text: b.String()}, nil
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
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return invalid("the .csv file is not valid CSV (line %d: %v); check its quoting", pe.StartLine, pe.Err)
	}
	return invalid("the .csv file cannot be read: %v", err)
}
