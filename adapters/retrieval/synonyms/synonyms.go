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

	"github.com/conciergehq/concierge/core/knowledge"
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
// 81,995 words; 9.4 MB of heap, 2.2 MB of it the list), with the groups of
// knowledge.SupportSynonyms before WordNet's synonyms.
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
	t.addGroups(knowledge.SupportSynonyms)
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

// addGroups makes the words of each group (space-separated) synonyms of
// each other, ahead of the synonyms the word already has: a question's
// synonyms are capped, and these are the ones that bridge a customer's
// words and a help page's.
func (t *Table) addGroups(groups []string) {
	for _, g := range groups {
		group := strings.Fields(g)
		for _, w := range group {
			syn := make([]string, 0, len(group)-1+len(t.words[w]))
			for _, o := range group {
				if o != w {
					syn = append(syn, o)
				}
			}
			for _, o := range t.words[w] {
				if !slices.Contains(syn, o) {
					syn = append(syn, o)
				}
			}
			t.words[w] = syn
		}
	}
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
	var syn []string
	baseOf(word, baseForms, func(base string) bool {
		syn = t.words[base]
		return syn != nil
	})
	return syn
}

// ending is a regular ending: the suffix, what replaces it in the base
// ("ies" -> "y"), and the shortest base it is stripped from.
type ending struct {
	suffix, restore string
	minBase         int
}

// baseOf tries word's bases by endings, in order, until found accepts one.
func baseOf(word string, endings []ending, found func(base string) bool) bool {
	for _, e := range endings {
		if base, ok := strings.CutSuffix(word, e.suffix); ok && len(base) >= e.minBase && found(base+e.restore) {
			return true
		}
	}
	return false
}

// baseForms are the regular endings Of strips, in the order tried:
// "sharing" -> "share", "deliveries" -> "delivery".
var baseForms = []ending{
	{"s", "", 3}, {"es", "", 3}, {"ed", "", 3}, {"d", "", 3}, {"ing", "", 3}, {"ing", "e", 3},
	{"ies", "y", 3}, {"ied", "y", 3},
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
	return baseOf(word, inflections, t.has)
}

// inflections are the regular endings Knows strips, with the shortest base
// each accepts: "-ed" needs five letters, since shorter bases are mostly
// abbreviations ("inst", "ord") that a misspelling reaches by accident
// ("insted" is no word for being "inst" + "ed").
var inflections = []ending{
	{"s", "", 3}, {"es", "", 3}, {"d", "", 3}, {"ed", "", 5}, {"ing", "", 3}, {"ing", "e", 3},
	{"ies", "y", 3}, {"ied", "y", 3},
}

func (t *Table) has(word string) bool {
	_, ok := slices.BinarySearch(t.known, word)
	return ok
}

// Len returns the number of words with synonyms.
func (t *Table) Len() int { return len(t.words) }
