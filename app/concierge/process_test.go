package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/conciergehq/concierge/config"
)

// Helpers for tests that run concierge as real processes: the test binary
// re-executed on TestAdmHelperProcess, its output, its listen address.

// admHelperArgs carries the arguments of TestAdmHelperProcess, separated by \x1f.
const admHelperArgs = "CONCIERGE_TEST_HELPER_ARGS"

// TestAdmHelperProcess is not a test: helperCommand starts the test binary
// on it to get a real concierge process, wired exactly as main wires it.
func TestAdmHelperProcess(t *testing.T) {
	raw := os.Getenv(admHelperArgs)
	if raw == "" {
		t.Skip("helper process for helperCommand")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, strings.Split(raw, "\x1f"), os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// helperCommand returns `concierge args...` as a child process (not yet
// started) with env as its only CONCIERGE_ configuration; ctx kills it as
// exec.CommandContext does.
func helperCommand(ctx context.Context, env map[string]string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAdmHelperProcess$")
	cmd.Env = []string{admHelperArgs + "=" + strings.Join(args, "\x1f")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, config.Prefix) && !strings.HasPrefix(kv, admHelperArgs+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

// syncBuffer is a bytes.Buffer safe to read while a process (or run) writes
// to it, from both its outputs.
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

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
