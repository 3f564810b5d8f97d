package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// browserKit is where the browser tests find what `make browser` installs:
// the repository's root, tools/browser (playwright-core and axe-core in its
// node_modules), Debian's chromium (CHROMIUM overrides it) and node.
type browserKit struct {
	root, tools, chromium, node string
}

// browserTools finds the browser kit, or fails the test saying how to
// install it: a missing tool is a broken setup, never a skip, so CI cannot
// pass without the browser tests.
func browserTools(t *testing.T) browserKit {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	k := browserKit{root: root, tools: filepath.Join(root, "tools", "browser"), chromium: os.Getenv("CHROMIUM")}
	if k.chromium == "" {
		k.chromium = "/usr/bin/chromium"
	}
	if k.node, err = exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed: run `make browser` (or `make test`), which installs what the browser tests need")
	}
	for _, need := range []string{k.chromium, filepath.Join(k.tools, "node_modules", "playwright-core", "package.json"), filepath.Join(k.tools, "node_modules", "axe-core", "axe.min.js")} {
		if _, err := os.Stat(need); err != nil {
			t.Fatalf("%s is missing: run `make browser` (or `make test`), which installs what the browser tests need", need)
		}
	}
	return k
}

// run runs a browser script of tools/browser with env (NAME=value) and the
// kit's chromium, and logs its lines; the test fails with its output when
// the script fails or outlives hang (a bound for a browser that hangs, not
// a measure). Screenshots go to the directory named by the variable
// shotsVar (`make screenshots` sets it under docs/), or to a temporary one.
func (k browserKit) run(t *testing.T, script, shotsVar string, hang time.Duration, env ...string) {
	t.Helper()
	shots := os.Getenv(shotsVar)
	if shots == "" {
		shots = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.node, script)
	cmd.Dir = k.tools
	cmd.Env = append(append(os.Environ(), env...), "SCREENSHOT_DIR="+shots, "CHROMIUM="+k.chromium)
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s failed (%v after %s):\n%s", script, err, time.Since(start).Round(time.Millisecond), out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		t.Log(line)
	}
}
