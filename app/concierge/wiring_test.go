package main

import (
	"strings"
	"testing"

	"github.com/conciergehq/concierge/config"
)

func TestLanguageModels(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    []string
		wantErr string
	}{
		{"the embedded model alone by default", nil, []string{"local"}, ""},
		{"an OpenAI-compatible server as default", map[string]string{"CONCIERGE_LLM_PROVIDER": "openai", "CONCIERGE_OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}, []string{"local", "openai"}, ""},
		{"a key makes openai available to agents", map[string]string{"CONCIERGE_OPENAI_API_KEY": "sk-test"}, []string{"local", "openai"}, ""},
		{"a blank model name is refused", map[string]string{"CONCIERGE_LLM_PROVIDER": "openai", "CONCIERGE_OPENAI_BASE_URL": "http://127.0.0.1:11434/v1", "CONCIERGE_OPENAI_MODEL": " "}, nil, "CONCIERGE_OPENAI_"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Load(func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			models, err := languageModels(cfg, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to name %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(models) != len(tt.want) {
				t.Fatalf("models = %v, want %v", models, tt.want)
			}
			for _, name := range tt.want {
				if models[name] == nil {
					t.Fatalf("model %q missing from %v", name, models)
				}
			}
		})
	}
}
