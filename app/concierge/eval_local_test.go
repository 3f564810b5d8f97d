package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	llmlocal "github.com/conciergehq/concierge/adapters/llm/local"
	"github.com/conciergehq/concierge/adapters/retrieval"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// TestLocalAnswerReplay is the quick loop for tuning the embedded model:
// the tuning halves only, retrieval in memory as TestRetrievalQuality runs
// it (the passages Decide keeps at the default threshold and top 5, with
// retrieval's answerability), then the local model on them, without the
// stack, the worker or HTTP. Its figures approximate TestAnswerQuality's
// (which chunks through the upload path); `make eval` is the measure.
// It runs only with EVAL_LOCAL=1; EVAL_DUMP=1 prints every question's
// outcome; EVAL_SPLIT=dev replays the development near misses (dev.json)
// in place of the tuning half's unanswerable questions.
func TestLocalAnswerReplay(t *testing.T) {
	if os.Getenv("EVAL_LOCAL") == "" {
		t.Skip("set EVAL_LOCAL=1 to replay the tuning halves through the local model")
	}
	sets := loadEvalSets(t)
	model := retrieval.DefaultRelevanceModel()
	threshold := domain.DefaultRetrievalThreshold
	var report strings.Builder
	var all [5]int
	var nAns, nUn int
	for _, set := range sets {
		c := indexEvalSet(t, set)
		llm := llmlocal.New(llmlocal.Options{Related: c.syn.Of, Known: c.syn.Knows})
		ask := func(q string) (ports.Completion, float64, []domain.Chunk) {
			j := c.judge(&model, q)
			chunks := retrieval.Decide(j, 5, threshold)
			if len(chunks) == 0 {
				return ports.Completion{}, j.Answerability, nil
			}
			comp, err := llm.Complete(context.Background(), ports.CompletionRequest{
				System:        "You are " + set.name + ", a customer support assistant.",
				Messages:      []ports.LLMMessage{{Role: "user", Content: q}},
				Knowledge:     chunks,
				Answerability: j.Answerability,
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return comp, j.Answerability, chunks
		}
		ans, un := inSplit(set.Answerable, splitTuning), inSplit(set.Unanswerable, splitTuning)
		label := splitTuning
		if os.Getenv("EVAL_SPLIT") == splitDev {
			// The development questions, with the tuning half's
			// answerable questions too as the guard against declining
			// more.
			ans, un, label = append(slices.Clip(ans), set.devAnswerable...), set.dev, "tuning and dev answerable, dev near misses"
		}
		answered, evidence, cited, declined, retrieved := 0, 0, 0, 0, 0
		for _, q := range ans {
			comp, a, chunks := ask(q.Question)
			if len(chunks) > 0 {
				retrieved++
			}
			ev, right := false, false
			if comp.Content != "" {
				answered++
				if ev = containsEvidence(comp.Content, q.Evidence); ev {
					evidence++
				}
				for _, id := range comp.Cited {
					if slices.Contains(q.Sources, strings.SplitN(id, "#", 2)[0]) {
						right = true
					}
				}
				if right {
					cited++
				}
			}
			if os.Getenv("EVAL_DUMP") != "" {
				// inPassage: the first passage (from 1) holding the
				// evidence, 0 for none.
				inPassage := 0
				for i, ch := range chunks {
					if containsEvidence(ch.Text, q.Evidence) {
						inPassage = i + 1
						break
					}
				}
				fmt.Fprintf(&report, "dump A %s a=%.2f kept=%d answered=%v evidence=%v(inpassage=%d) right=%v | %s | %q | %q\n",
					q.ID, a, len(chunks), comp.Content != "", ev, inPassage, right, q.Question, q.Evidence, comp.Content)
			}
		}
		for _, q := range un {
			comp, a, chunks := ask(q.Question)
			if comp.Content == "" {
				declined++
			}
			if os.Getenv("EVAL_DUMP") != "" {
				fmt.Fprintf(&report, "dump U %s a=%.2f kept=%d answered=%v | %s | %q\n", q.ID, a, len(chunks), comp.Content != "", q.Question, comp.Content)
			}
		}
		nAns += len(ans)
		nUn += len(un)
		for i, v := range []int{answered, declined, evidence, cited, retrieved} {
			all[i] += v
		}
		fmt.Fprintf(&report, "| %s | %s | %d/%d | %d/%d | %d/%d | %d/%d | retrieval kept passages for %d/%d |\n", set.name, label,
			answered, len(ans), declined, len(un), evidence, len(ans), cited, len(ans), retrieved, len(ans))
	}
	label := splitTuning
	if os.Getenv("EVAL_SPLIT") == splitDev {
		label = "tuning and dev answerable, dev near misses"
	}
	fmt.Fprintf(&report, "| all | %s | %d/%d | %d/%d | %d/%d | %d/%d | retrieval kept passages for %d/%d |\n", label,
		all[0], nAns, all[1], nUn, all[2], nAns, all[3], nAns, all[4], nAns)
	t.Logf("\nreplay through the local model (threshold %.2f)\n\n| set | split | answered | falling back | evidence | right page |\n|---|---|---|---|---|---|\n%s", threshold, report.String())
}
