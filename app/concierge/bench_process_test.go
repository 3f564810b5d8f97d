package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// ownProcessEnv names the benchmark a process of the test binary was started
// to run alone (inOwnProcess).
const ownProcessEnv = "CONCIERGE_BENCH_OWN_PROCESS"

// inOwnProcess runs the benchmark b again, alone, in a new process of this
// test binary, and reports that process's figures as b's; it returns true
// once that is done, and the caller returns. In the new process it returns
// false: the caller measures.
//
// Memory figures need this: a heap or RSS delta taken in a process where
// another benchmark ran first includes that benchmark's memory being
// released or not yet returned to the system (BenchmarkRelay printed -242
// KiB per stream after BenchmarkRetrieval's 100,000 chunks). A fresh
// process has nothing before the benchmark's own baseline.
func inOwnProcess(b *testing.B) bool {
	b.Helper()
	if os.Getenv(ownProcessEnv) == b.Name() {
		return false
	}
	// "BenchmarkRetrieval/chunks=10000" selects that sub-benchmark alone.
	parts := strings.Split(b.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench="+strings.Join(parts, "/"),
		"-test.benchtime=1x", "-test.benchmem=false", "-test.timeout=30m")
	cmd.Env = append(os.Environ(), ownProcessEnv+"="+b.Name())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	figures, logs, found := benchFigures(out.Bytes(), b.Name())
	for _, line := range logs {
		b.Log(line)
	}
	if err != nil || !found {
		b.Fatalf("%s in its own process: %v\n%s", b.Name(), err, out.String())
	}
	for _, f := range figures {
		b.ReportMetric(f.value, f.unit)
	}
	return true
}

// logSource is the "file.go:12: " a b.Log line starts with.
var logSource = regexp.MustCompile(`^[\w.]+\.go:\d+: `)

// benchFigure is one "value unit" pair of a benchmark's result line.
type benchFigure struct {
	value float64
	unit  string
}

// benchFigures reads a `go test -bench` output for the result line of the
// benchmark name: its figures except ns/op (the child's, meaningless to the
// parent), and the log lines printed under it. found says whether the
// result line was there.
func benchFigures(out []byte, name string) (figures []benchFigure, logs []string, found bool) {
	result := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `(-\d+)?\s+\d+\s+(.*)$`)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := result.FindStringSubmatch(line); m != nil {
			found = true
			fields := strings.Fields(m[2])
			for i := 0; i+1 < len(fields); i += 2 {
				v, err := strconv.ParseFloat(fields[i], 64)
				if err != nil || fields[i+1] == "ns/op" {
					continue
				}
				figures = append(figures, benchFigure{value: v, unit: fields[i+1]})
			}
			continue
		}
		// b.Log lines are indented under the benchmark's name, after the
		// file and line that logged them, which the parent's b.Log repeats.
		if strings.HasPrefix(line, "    ") {
			logs = append(logs, logSource.ReplaceAllString(strings.TrimSpace(line), ""))
		}
	}
	return figures, logs, found
}

func TestBenchFigures(t *testing.T) {
	out := []byte(`goos: linux
BenchmarkRetrieval/chunks=100000-2         	       1	9123456789 ns/op	        13.50 p50-ms	        25.20 p99-ms	       263.0 MB-per-100k
    bench_knowledge_test.go:165: 100000 chunks: load 2s; heap +263 MB
    bench_knowledge_test.go:166: a second line
BenchmarkRetrieval/chunks=1000000-2        	       1	1 ns/op	         1.00 p50-ms
PASS
`)
	tests := []struct {
		name    string
		want    []benchFigure
		logs    int
		matched bool
	}{
		{"BenchmarkRetrieval/chunks=100000", []benchFigure{{13.5, "p50-ms"}, {25.2, "p99-ms"}, {263, "MB-per-100k"}}, 2, true},
		{"BenchmarkRetrieval/chunks=10000", nil, 2, false},
		{"BenchmarkRelay", nil, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, logs, found := benchFigures(out, tt.name)
			if found != tt.matched || len(logs) != tt.logs {
				t.Fatalf("found %v with %d log lines, want %v with %d", found, len(logs), tt.matched, tt.logs)
			}
			if logs[0] != "100000 chunks: load 2s; heap +263 MB" {
				t.Fatalf("log line %q keeps its source or lost text", logs[0])
			}
			if len(got) != len(tt.want) {
				t.Fatalf("figures %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("figure %d: %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
