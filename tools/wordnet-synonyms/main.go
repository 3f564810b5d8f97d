// Command wordnet-synonyms derives the synonym table that retrieval uses
// (adapters/retrieval/synonyms/wordnet.txt.gz) from WordNet 3.0 as Debian's
// wordnet-base package installs it (/usr/share/wordnet). For every
// single-word lemma it lists the other single-word lemmas of its commonest
// senses (WordNet orders a lemma's senses by how often they were tagged in
// its corpus), so "refund" finds "repay" but not the rare senses that would
// add noise. It also writes every single-word lemma and irregular form
// ("forgot", "wrote") as a word list (words.txt.gz), so retrieval can tell
// a real word from a misspelt one. Run it with `make synonyms`; the output
// is committed, so building Concierge does not need WordNet.
package main

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

func main() {
	dir := flag.String("wordnet", "/usr/share/wordnet", "WordNet's dict directory")
	out := flag.String("out", "adapters/retrieval/synonyms/wordnet.txt.gz", "the table to write")
	senses := flag.Int("senses", 2, "how many of a lemma's commonest senses to take, per part of speech")
	maxSyn := flag.Int("max", 8, "at most this many synonyms per word")
	wordsOut := flag.String("words", "adapters/retrieval/synonyms/words.txt.gz", "the word list to write")
	flag.Parse()
	table := map[string][]string{}
	known := map[string]bool{}
	for _, pos := range []string{"noun", "verb", "adj", "adv"} {
		if err := readWords(filepath.Join(*dir, "index."+pos), filepath.Join(*dir, pos+".exc"), known); err != nil {
			log.Fatal(err)
		}
		synsets, err := readSynsets(filepath.Join(*dir, "data."+pos))
		if err != nil {
			log.Fatal(err)
		}
		if err := readIndex(filepath.Join(*dir, "index."+pos), synsets, *senses, table); err != nil {
			log.Fatal(err)
		}
	}
	words := make([]string, 0, len(table))
	for w := range table {
		words = append(words, w)
	}
	slices.Sort(words)
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	bw := bufio.NewWriter(zw)
	fmt.Fprintln(bw, "# Derived from WordNet 3.0, Copyright 2006 by Princeton University (see LICENSE-wordnet).")
	fmt.Fprintln(bw, "# word synonym... (single words of the word's commonest senses)")
	n := 0
	for _, w := range words {
		syn := table[w]
		if len(syn) > *maxSyn {
			syn = syn[:*maxSyn]
		}
		fmt.Fprintln(bw, w+" "+strings.Join(syn, " "))
		n++
	}
	if err := bw.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	log.Printf("%d words written to %s", n, *out)
	if err := writeWords(*wordsOut, known); err != nil {
		log.Fatal(err)
	}
	log.Printf("%d words written to %s", len(known), *wordsOut)
}

// readWords adds to known the plain single-word lemmas of an index file and
// the plain irregular forms of its exception file ("forgot forget").
func readWords(index, exceptions string, known map[string]bool) error {
	for _, path := range []string{index, exceptions} {
		err := eachLine(path, func(line string) error {
			if w, _, _ := strings.Cut(line, " "); plainWord(w) {
				known[w] = true
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// eachLine calls fn with every line of a WordNet file but its licence
// header (the lines that start with two spaces), stopping at fn's first
// error.
func eachLine(path string, fn func(line string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); !strings.HasPrefix(line, "  ") {
			if err := fn(line); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeWords writes the words sorted, one per line, gzipped.
func writeWords(path string, known map[string]bool) error {
	words := make([]string, 0, len(known))
	for w := range known {
		words = append(words, w)
	}
	slices.Sort(words)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	bw := bufio.NewWriter(zw)
	fmt.Fprintln(bw, "# Derived from WordNet 3.0, Copyright 2006 by Princeton University (see LICENSE-wordnet).")
	fmt.Fprintln(bw, "# every single-word lemma and irregular form, sorted")
	for _, w := range words {
		fmt.Fprintln(bw, w)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// readSynsets returns the single-word lemmas of every synset by offset.
func readSynsets(path string) (map[string][]string, error) {
	out := map[string][]string{}
	err := eachLine(path, func(line string) error {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			return nil
		}
		count, err := strconv.ParseInt(fields[3], 16, 32)
		if err != nil {
			return fmt.Errorf("%s: %q: %w", path, fields[0], err)
		}
		var lemmas []string
		for i := 0; i < int(count) && 4+2*i < len(fields); i++ {
			w := strings.ToLower(fields[4+2*i])
			if p := strings.IndexByte(w, '('); p > 0 { // adjective markers: "(a)", "(p)"
				w = w[:p]
			}
			if plainWord(w) {
				lemmas = append(lemmas, w)
			}
		}
		out[fields[0]] = lemmas
		return nil
	})
	return out, err
}

// readIndex adds, for every lemma, the lemmas of its first senses.
func readIndex(path string, synsets map[string][]string, senses int, table map[string][]string) error {
	return eachLine(path, func(line string) error {
		fields := strings.Fields(line)
		if len(fields) < 6 || !plainWord(fields[0]) {
			return nil
		}
		lemma := fields[0]
		synsetCount, _ := strconv.Atoi(fields[2])
		pointers, _ := strconv.Atoi(fields[3])
		offsets := fields[4+pointers+2:]
		offsets = offsets[:min(len(offsets), synsetCount, senses)]
		for _, off := range offsets {
			for _, w := range synsets[off] {
				if w != lemma && !slices.Contains(table[lemma], w) {
					table[lemma] = append(table[lemma], w)
				}
			}
		}
		return nil
	})
}

// plainWord keeps single lowercase words of letters, at least three long.
func plainWord(w string) bool {
	if len(w) < 3 {
		return false
	}
	for _, c := range w {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
