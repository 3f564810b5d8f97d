// Command wordnet-synonyms derives the synonym table that retrieval uses
// (adapters/retrieval/synonyms/wordnet.txt.gz) from WordNet 3.0 as Debian's
// wordnet-base package installs it (/usr/share/wordnet). For every
// single-word lemma it lists the other single-word lemmas of its commonest
// senses (WordNet orders a lemma's senses by how often they were tagged in
// its corpus), so "refund" finds "repay" but not the rare senses that would
// add noise. Run it with `make synonyms`; the output is committed, so
// building Concierge does not need WordNet.
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
	flag.Parse()
	table := map[string][]string{}
	for _, pos := range []string{"noun", "verb", "adj", "adv"} {
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
}

// readSynsets returns the single-word lemmas of every synset by offset.
func readSynsets(path string) (map[string][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "  ") { // the licence header
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		count, err := strconv.ParseInt(fields[3], 16, 32)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, fields[0], err)
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
	}
	return out, sc.Err()
}

// readIndex adds, for every lemma, the lemmas of its first senses.
func readIndex(path string, synsets map[string][]string, senses int, table map[string][]string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "  ") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 6 || !plainWord(fields[0]) {
			continue
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
	}
	return sc.Err()
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
