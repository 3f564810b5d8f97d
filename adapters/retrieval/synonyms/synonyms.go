// Package synonyms is a table of English synonyms for retrieval: the words
// a customer may use for what a help page calls something else ("money
// back" for "refund", "price" for "cost"). It is derived from WordNet 3.0
// (LICENSE-wordnet) by tools/wordnet-synonyms, keeping only the single-word
// synonyms of each word's commonest senses, and compiled into the binary,
// so it needs no download or package at run time.
package synonyms

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"strings"
)

//go:embed wordnet.txt.gz
var wordnet []byte

// Table maps lowercase words to their synonyms. It is immutable once
// loaded and safe for concurrent use.
type Table struct {
	words map[string][]string
}

// Load reads the embedded table (about 43,000 words, a few MB in memory).
// Load it once per process and share it.
func Load() (*Table, error) {
	zr, err := gzip.NewReader(bytes.NewReader(wordnet))
	if err != nil {
		return nil, fmt.Errorf("synonyms: %w", err)
	}
	t := &Table{words: make(map[string][]string, 44_000)}
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) > 1 {
			t.words[fields[0]] = fields[1:]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("synonyms: %w", err)
	}
	return t, nil
}

// Of returns the synonyms of a lowercase word, trying its base form when
// the word is an inflection ("refunds", "charged", "deleting"). A nil
// Table has none.
func (t *Table) Of(word string) []string {
	if t == nil {
		return nil
	}
	if s, ok := t.words[word]; ok {
		return s
	}
	for _, suffix := range []string{"s", "es", "ed", "d", "ing"} {
		if base, ok := strings.CutSuffix(word, suffix); ok && len(base) >= 3 {
			if s, ok := t.words[base]; ok {
				return s
			}
		}
	}
	if base, ok := strings.CutSuffix(word, "ing"); ok && len(base) >= 3 {
		if s, ok := t.words[base+"e"]; ok { // "sharing" -> "share"
			return s
		}
	}
	return nil
}

// Knows reports whether the table holds a lowercase word, itself or as an
// inflection of a base form of at least minKnownBase letters. It tells a
// real word from a misspelling ("theme" from "thme") for words that have
// synonyms; a word without any (most names) is unknown to it. Of is looser:
// "insted" finds "inst", an abbreviation; Knows does not.
func (t *Table) Knows(word string) bool {
	if t == nil {
		return false
	}
	if _, ok := t.words[word]; ok {
		return true
	}
	for _, suffix := range []string{"s", "es", "ed", "d", "ing"} {
		if base, ok := strings.CutSuffix(word, suffix); ok && len(base) >= minKnownBase {
			if _, ok := t.words[base]; ok {
				return true
			}
		}
	}
	if base, ok := strings.CutSuffix(word, "ing"); ok && len(base) >= minKnownBase-1 {
		_, ok := t.words[base+"e"]
		return ok
	}
	return false
}

// minKnownBase is the shortest base form Knows accepts: shorter ones are
// mostly abbreviations ("inst", "ord") that misspellings reach by accident.
const minKnownBase = 5

// Len returns the number of words with synonyms.
func (t *Table) Len() int { return len(t.words) }
