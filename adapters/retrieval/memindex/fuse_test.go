package memindex

import (
	"math"
	"slices"
	"testing"
)

func TestFuse(t *testing.T) {
	kw := []Hit{{Doc: 7, Score: 9}, {Doc: 3, Score: 5}, {Doc: 1, Score: 2}}
	vec := []Hit{{Doc: 3, Score: 0.9}, {Doc: 5, Score: 0.8}, {Doc: 7, Score: 0.7}, {Doc: 9, Score: 0.1}}
	tests := []struct {
		name  string
		k     int
		rrfK  int
		lists [][]Hit
		want  []Fused
	}{
		{
			name: "two lists, rrfK 60", k: 10, rrfK: 60, lists: [][]Hit{kw, vec},
			want: []Fused{
				{Doc: 3, Score: 1.0/62 + 1.0/61, Ranks: []int{2, 1}},
				{Doc: 7, Score: 1.0/61 + 1.0/63, Ranks: []int{1, 3}},
				{Doc: 5, Score: 1.0 / 62, Ranks: []int{0, 2}},
				{Doc: 1, Score: 1.0 / 63, Ranks: []int{3, 0}},
				{Doc: 9, Score: 1.0 / 64, Ranks: []int{0, 4}},
			},
		},
		{
			name: "k cuts", k: 2, rrfK: 60, lists: [][]Hit{kw, vec},
			want: []Fused{
				{Doc: 3, Score: 1.0/62 + 1.0/61, Ranks: []int{2, 1}},
				{Doc: 7, Score: 1.0/61 + 1.0/63, Ranks: []int{1, 3}},
			},
		},
		{
			name: "rrfK 0 is 1/rank", k: 3, rrfK: 0, lists: [][]Hit{kw, vec},
			want: []Fused{
				{Doc: 3, Score: 1.0/2 + 1, Ranks: []int{2, 1}},
				{Doc: 7, Score: 1 + 1.0/3, Ranks: []int{1, 3}},
				{Doc: 5, Score: 1.0 / 2, Ranks: []int{0, 2}},
			},
		},
		{
			name: "negative rrfK counts as 0", k: 1, rrfK: -5, lists: [][]Hit{kw},
			want: []Fused{{Doc: 7, Score: 1, Ranks: []int{1}}},
		},
		{
			name: "ties: better rank in the earlier list, then absent last",
			k:    10, rrfK: 60,
			lists: [][]Hit{{{Doc: 4}, {Doc: 2}}, {{Doc: 2}, {Doc: 4}}, {{Doc: 8}}},
			want: []Fused{
				{Doc: 4, Score: 1.0/61 + 1.0/62, Ranks: []int{1, 2, 0}},
				{Doc: 2, Score: 1.0/62 + 1.0/61, Ranks: []int{2, 1, 0}},
				{Doc: 8, Score: 1.0 / 61, Ranks: []int{0, 0, 1}},
			},
		},
		{
			name: "a duplicate in one list counts once, at its best rank",
			k:    10, rrfK: 60,
			lists: [][]Hit{{{Doc: 1}, {Doc: 2}, {Doc: 1}}},
			want: []Fused{
				{Doc: 1, Score: 1.0 / 61, Ranks: []int{1}},
				{Doc: 2, Score: 1.0 / 62, Ranks: []int{2}},
			},
		},
		{
			name: "an empty list leaves a zero rank", k: 10, rrfK: 60, lists: [][]Hit{nil, {{Doc: 5}}},
			want: []Fused{{Doc: 5, Score: 1.0 / 61, Ranks: []int{0, 1}}},
		},
		{name: "no lists", k: 10, rrfK: 60, lists: nil, want: nil},
		{name: "empty lists", k: 10, rrfK: 60, lists: [][]Hit{nil, {}}, want: nil},
		{name: "k 0", k: 0, rrfK: 60, lists: [][]Hit{kw}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Fuse(tt.k, tt.rrfK, tt.lists...)
			if len(got) != len(tt.want) {
				t.Fatalf("Fuse = %+v, want %+v", got, tt.want)
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if g.Doc != w.Doc || math.Abs(g.Score-w.Score) > 1e-12 || !slices.Equal(g.Ranks, w.Ranks) {
					t.Fatalf("Fuse[%d] = %+v, want %+v (all: %+v)", i, g, w, got)
				}
			}
		})
	}
}

// TestFuseRanksAreSeparate guards the shared backing array of Ranks.
func TestFuseRanksAreSeparate(t *testing.T) {
	got := Fuse(10, 60, []Hit{{Doc: 1}, {Doc: 2}}, []Hit{{Doc: 2}})
	got[0].Ranks = append(got[0].Ranks, 99)
	if !slices.Equal(got[1].Ranks, []int{1, 0}) {
		t.Fatalf("appending to one Ranks changed another: %+v", got)
	}
}
