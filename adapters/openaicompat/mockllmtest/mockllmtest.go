// Package mockllmtest runs @dwmkerr/mock-llm, the third-party
// OpenAI-compatible server pinned in tools/mock-llm (installed by `make
// test` through scripts/mock-llm.sh), for contract and end-to-end tests.
package mockllmtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const installHint = "mock-llm is not installed: run `bash scripts/mock-llm.sh` (or `make mock-llm`)"

// Rule is one mock-llm response rule: requests to Path (a regular
// expression) with Method whose JMESPath Match holds get Response.
type Rule struct {
	Match    string   `json:"match,omitempty"`
	Sequence *int     `json:"sequence,omitempty"`
	Path     string   `json:"path"`
	Method   string   `json:"method"`
	Response Response `json:"response"`
}

// Response is a rule's answer; Content is the response body (templated).
type Response struct {
	Status  int    `json:"status"`
	Content string `json:"content"`
}

// Config is mock-llm's configuration: its rules, and the size of the chunks
// it streams (characters).
type Config struct {
	ChunkSize int
	Rules     []Rule
}

func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{
		"streaming": map[string]int{"chunkSize": max(c.ChunkSize, 1), "chunkIntervalMs": 1},
		"rules":     c.Rules,
	})
}

// Server is one running mock-llm process.
type Server struct {
	// URL is the server's root, e.g. http://127.0.0.1:41234 (add /v1).
	URL string
	out *syncBuffer
}

// Start runs mock-llm on a free loopback port until the test ends, with
// config, or with mock-llm's own defaults when config is nil. A missing
// install skips the test, except under CI, where it fails, so a broken setup
// cannot pass silently. The binary is tools/mock-llm's, or $MOCK_LLM_BIN.
func Start(t testing.TB, config *Config) *Server {
	t.Helper()
	bin := binary(t)
	dir := t.TempDir()
	var args []string
	if config != nil {
		raw, err := json.Marshal(config)
		if err != nil {
			t.Fatal(err)
		}
		// JSON is YAML; mock-llm reads the file with js-yaml.
		path := filepath.Join(dir, "mock-llm.yaml")
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		args = []string{"--config", path}
	}
	// A free port can be taken between our probe and mock-llm's bind: try
	// again with another.
	var lastErr error
	for range 3 {
		port := freePort(t)
		out := &syncBuffer{}
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOST=127.0.0.1", "PORT="+strconv.Itoa(port))
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start mock-llm: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), out: out}
		if lastErr = s.waitReady(exited); lastErr == nil {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
				// What the mock saw and answered explains most failures
				// of a test that talks to it.
				if t.Failed() {
					t.Logf("mock-llm output:\n%s", out.String())
				}
			})
			return s
		}
		_ = cmd.Process.Kill()
		<-exited
		lastErr = fmt.Errorf("%w; output:\n%s", lastErr, out.String())
	}
	t.Fatalf("mock-llm did not start: %v", lastErr)
	return nil
}

// binary finds the pinned mock-llm below the module root.
func binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("MOCK_LLM_BIN")
	if bin == "" {
		dir, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				t.Fatal("mockllmtest: no go.mod above the test's directory")
			}
			dir = parent
		}
		bin = filepath.Join(dir, "tools", "mock-llm", "node_modules", ".bin", "mock-llm")
	}
	missing := ""
	if _, err := os.Stat(bin); err != nil {
		missing = bin + " not found"
	} else if _, err := exec.LookPath("node"); err != nil {
		missing = "node not on PATH"
	}
	if missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s (%s)", installHint, missing)
		}
		t.Skipf("%s (%s)", installHint, missing)
	}
	return bin
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (s *Server) waitReady(exited <-chan struct{}) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("mock-llm exited")
		default:
		}
		res, err := http.Get(s.URL + "/ready")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("mock-llm not ready after 20s")
}

// Configure replaces the configuration and resets mock-llm's sequence
// counters; nil restores mock-llm's defaults.
func (s *Server) Configure(t testing.TB, config *Config) {
	t.Helper()
	s.admin(t, http.MethodDelete, nil)
	if config != nil {
		s.admin(t, http.MethodPost, config)
	}
}

func (s *Server) admin(t testing.TB, method string, body any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.URL+"/config", r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s /config: %s", method, res.Status)
	}
}

// Count is how many POSTs to path mock-llm has logged.
func (s *Server) Count(path string) int {
	return strings.Count(s.out.String(), "POST "+path)
}

// Expect waits for mock-llm's log to show want POSTs to path since before
// (a Count), then checks no more arrive.
func (s *Server) Expect(t testing.TB, path string, before, want int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for s.Count(path)-before < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if got := s.Count(path) - before; got != want {
		t.Fatalf("mock-llm saw %d POST %s, want %d", got, path, want)
	}
}

// syncBuffer collects the process's output from its two pipes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
