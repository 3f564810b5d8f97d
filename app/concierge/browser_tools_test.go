package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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
