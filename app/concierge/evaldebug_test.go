package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/conciergehq/concierge/adapters/retrieval"
)

func TestEvalDebug(t *testing.T) {
	if os.Getenv("EVAL_DEBUG") == "" {
		t.Skip()
	}
	m := retrieval.DefaultRelevanceModel()
	for _, set := range loadEvalSets(t) {
		c := indexEvalSet(t, set)
		show := func(q evalQuestion, kind string) {
			j := c.judge(&m, q.Question)
			var focus string
			for _, f := range j.Focus {
				focus += fmt.Sprintf("%s(%.2f,df%d%s) ", f.Word, f.Weight, f.DF, map[bool]string{true: ",typo"}[f.Typo])
			}
			top := j.Candidates[0]
			fmt.Printf("%s %s ans=%.2f %q\n   focus: %s\n   top: %s missing=%v cov=%.2f win=%.2f title=%.2f\n", kind, q.ID, j.Answerability, q.Question, focus, c.chunks[top.Doc].SourceID, top.Missing, top.Features[0], top.Features[1], top.Features[2])
		}
		for _, q := range inSplit(set.Unanswerable, splitTuning) {
			show(q, "UN")
		}
		for _, q := range inSplit(set.Answerable, splitTuning) {
			show(q, "AN")
		}
	}
}
