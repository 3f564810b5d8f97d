// Package synonyms is a table of English synonyms for retrieval: the words
// a customer may use for what a help page calls something else ("money
// back" for "refund", "price" for "cost"). It is derived from WordNet 3.0
// (LICENSE-wordnet) by tools/wordnet-synonyms, keeping only the single-word
// synonyms of each word's commonest senses, and compiled into the binary,
// so it needs no download or package at run time. With it comes WordNet's
// word list, to tell a real word from a misspelt one (Knows).
package synonyms

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"slices"
	"strings"
)

//go:embed wordnet.txt.gz
var wordnet []byte

//go:embed words.txt.gz
var wordList []byte

// Table maps lowercase words to their synonyms. It is immutable once
// loaded and safe for concurrent use.
type Table struct {
	words map[string][]string
	// known are WordNet's single words (lemmas and irregular forms),
	// sorted: about 82,000, kept as one slice rather than a map.
	known []string
}

// Load reads the embedded table (43,445 words with synonyms and a list of
// 81,995 words; 9.4 MB of heap, 2.2 MB of it the list).
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
	if t.known, err = readWords(wordList); err != nil {
		return nil, fmt.Errorf("synonyms: words: %w", err)
	}
	return t, nil
}

// readWords reads a gzipped word list, one word per line in sorted order.
func readWords(data []byte) ([]string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	words := make([]string, 0, 83_000)
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		if line := sc.Text(); line != "" && line[0] != '#' {
			words = append(words, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !slices.IsSorted(words) {
		return nil, fmt.Errorf("the list is not sorted")
	}
	return words, nil
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

// Knows reports whether a lowercase word is an English word of WordNet's,
// itself or as a regular inflection of one ("themes", "installing");
// irregular forms are words of their own ("forgot", "shipped"). It tells a
// real word from a misspelling ("chart" from "chrat"); names and product
// words are mostly unknown to it.
func (t *Table) Knows(word string) bool {
	if t == nil || word == "" {
		return false
	}
	if t.has(word) {
		return true
	}
	for _, in := range inflections {
		if base, ok := strings.CutSuffix(word, in.suffix); ok && len(base) >= in.minBase && t.has(base+in.restore) {
			return true
		}
	}
	return false
}

// inflections are the regular endings Knows strips, with the shortest base
// each accepts: "-ed" needs five letters, since shorter bases are mostly
// abbreviations ("inst", "ord") that a misspelling reaches by accident
// ("insted" is no word for being "inst" + "ed").
var inflections = []struct {
	suffix, restore string
	minBase         int
}{
	{"s", "", 3}, {"es", "", 3}, {"d", "", 3}, {"ed", "", 5}, {"ing", "", 3}, {"ing", "e", 3},
}

func (t *Table) has(word string) bool {
	_, ok := slices.BinarySearch(t.known, word)
	return ok
}

// Len returns the number of words with synonyms.
func (t *Table) Len() int { return len(t.words) }
