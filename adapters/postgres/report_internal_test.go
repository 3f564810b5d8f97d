package postgres

import (
	"maps"
	"testing"
)

func TestEachCount(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]int64
		wantErr bool
	}{
		{"as PostgreSQL prints it", `{"messages": 12, "outcome:UNDECIDED": -3, "prompt_tokens:gpt-4o-mini": 123456789012}`,
			map[string]int64{"messages": 12, "outcome:UNDECIDED": -3, "prompt_tokens:gpt-4o-mini": 123456789012}, false},
		{"empty", `{}`, map[string]int64{}, false},
		{"no spaces", `{"a":1,"b":2}`, map[string]int64{"a": 1, "b": 2}, false},
		{"a key with an escape takes encoding/json", `{"prompt_tokens:my \"model\"": 5, "a": 1}`,
			map[string]int64{`prompt_tokens:my "model"`: 5, "a": 1}, false},
		{"not an object", `[1, 2]`, nil, true},
		{"a string value", `{"a": "1"}`, nil, true},
		{"a fraction", `{"a": 1.5}`, nil, true},
		{"too many digits", `{"a": 12345678901234567890}`, nil, true},
		{"unterminated", `{"a": 1`, nil, true},
		{"trailing text", `{"a": 1} x`, nil, true},
		{"no value", `{"a": }`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]int64{}
			err := eachCount([]byte(tt.in), func(k string, n int64) { got[k] = n })
			if (err != nil) != tt.wantErr {
				t.Fatalf("eachCount(%s) error %v, want error %v", tt.in, err, tt.wantErr)
			}
			if !tt.wantErr && !maps.Equal(got, tt.want) {
				t.Errorf("eachCount(%s) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
