package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// startMockLLM runs the pinned @dwmkerr/mock-llm (installed by `make test`)
// on loopback, answering every chat completion with reply.
func startMockLLM(t *testing.T, reply string) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "..", "tools", "mock-llm", "node_modules", ".bin", "mock-llm"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mock-llm is not installed: run `npm ci --prefix tools/mock-llm` (%v)", err)
		}
		t.Skipf("mock-llm is not installed: run `npm ci --prefix tools/mock-llm`")
	}
	content, _ := json.Marshal(reply)
	config := map[string]any{
		"streaming": map[string]int{"chunkSize": 8, "chunkIntervalMs": 1},
		"rules": []map[string]any{{
			"path": "/v1/chat/completions", "method": "POST", "match": "@",
			"response": map[string]any{"status": 200, "content": `{"id":"chatcmpl-1","object":"chat.completion","model":"mock-model",` +
				`"choices":[{"index":0,"message":{"role":"assistant","content":` + string(content) + `},"finish_reason":"stop"}]}`},
		}},
	}
	dir := t.TempDir()
	raw, _ := json.Marshal(config)
	if err := os.WriteFile(filepath.Join(dir, "mock-llm.yaml"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--config", filepath.Join(dir, "mock-llm.yaml"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOST=127.0.0.1", fmt.Sprintf("PORT=%d", port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if resp, err := http.Get(url + "/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return url
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("mock-llm did not become ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestChatThroughAnOpenAICompatibleServer runs the whole service with the
// openai provider against a real OpenAI-compatible server process.
func TestChatThroughAnOpenAICompatibleServer(t *testing.T) {
	const reply = "Standard shipping takes 3 to 5 business days [1]."
	mock := startMockLLM(t, reply)
	s := newStack(t, stackOptions{env: map[string]string{
		"CONCIERGE_LLM_PROVIDER": "openai", "CONCIERGE_OPENAI_BASE_URL": mock + "/v1",
		"CONCIERGE_OPENAI_API_KEY": "sk-mock", "CONCIERGE_OPENAI_MODEL": "mock-model",
	}})
	tn := s.newTenant(domain.PlanStandard)
	supportAgent(s, tn)

	r, a := s.chat(tn, map[string]any{"agent": "support", "message": "How long does shipping take?"})
	s.mustStatus(r, 200)
	if a.Message != reply || a.IsFallback || len(a.Citations) != 1 || a.Citations[0].DocumentName != "Shipping policy" {
		t.Fatalf("answer = %+v", a)
	}

	resp := s.postStream(tn, map[string]any{"agent": "support", "message": "How long does shipping take?", "stream": true})
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	events := readSSE(t, strings.NewReader(string(raw)), 0)
	var text strings.Builder
	for _, ev := range events[:len(events)-1] {
		text.WriteString(ev.Data["content"].(string))
	}
	done := events[len(events)-1].Data
	if len(events) < 3 || done["type"] != "done" || done["message"] != reply || text.String() != reply {
		t.Fatalf("stream = %s", raw)
	}

	// Nothing relevant retrieved: the engine answers with the fallback and
	// never asks the model.
	r, off := s.chat(tn, map[string]any{"agent": "support", "message": "Who won the football match?"})
	s.mustStatus(r, 200)
	if !off.IsFallback || off.Message == reply {
		t.Fatalf("off-topic answer = %+v", off)
	}
}
