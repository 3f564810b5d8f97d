package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

const (
	oversizeClients = 300
	// oversizeBytes is what each oversize request would send: over every
	// route's limit, the upload's (20 MiB and 64 KiB) included.
	oversizeBytes = 25 << 20
)

// BenchmarkOversizeUploads measures the API's memory while 300 clients at
// once send bodies over their route's limit: 25 MiB each, to the upload
// route (authenticated, as multipart forms) and to /healthz, half declared
// by Content-Length and half chunked. The API is `concierge serve` in its
// own process, so only its memory counts: the peak resident set of each
// phase (VmHWM, reset before the phase through /proc/<pid>/clear_refs) and
// the largest VmRSS sampled during it.
//
// Baseline, in the same rounds: the same process idle, and under 300
// clients sending small JSON requests (retrieval queries) as fast as they
// are answered. Phases alternate idle, small, oversize in every round;
// medians over the rounds (CONCIERGE_BENCH_ROUNDS, at least 5).
func BenchmarkOversizeUploads(b *testing.B) {
	c := newCluster(b, clusterOptions{pods: 1, env: map[string]string{
		"CONCIERGE_LOG_LEVEL": "error", "CONCIERGE_RATE_LIMIT_API_PER_MINUTE": "100000000",
		"CONCIERGE_RATE_LIMIT_PUBLIC_PER_MINUTE": "100000000",
	}})
	pod := c.pods[0]
	pod.mu.Lock()
	pid := pod.cmd.Process.Pid
	pod.mu.Unlock()
	tn := c.newTenant(domain.PlanStandard)
	c.must(c.do(pod, "POST", "/api/v2/agents", map[string]any{"slug": "support", "name": "Support"}, tn.auth()), 201)
	addr := strings.TrimPrefix(pod.base, "http://")
	phase := benchDuration() / 2

	mem := procMemory{pid: pid}
	type round struct{ idle, small, oversize memPeak }
	var rounds []round
	for i := range max(5, benchRounds()) {
		var r round
		r.idle = mem.during(b, func() { time.Sleep(time.Second) })
		var small *loadCounts
		r.small = mem.during(b, func() { small = smallJSONLoad(addr, tn.Key, phase) })
		var over *loadCounts
		r.oversize = mem.during(b, func() { over = oversizeLoad(b, addr, tn.Key, phase) })
		b.Logf("round %d: idle %s; small JSON %s (%s); oversize %s (%s)", i+1, r.idle, r.small, small, r.oversize, over)
		if small.failed() || over.failed() {
			b.Errorf("round %d: unexpected answers: small %s, oversize %s", i+1, small, over)
		}
		rounds = append(rounds, r)
	}
	median := func(f func(round) float64) float64 {
		v := make([]float64, len(rounds))
		for i, r := range rounds {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	idle := median(func(r round) float64 { return r.idle.hwmMiB() })
	small := median(func(r round) float64 { return r.small.hwmMiB() })
	over := median(func(r round) float64 { return r.oversize.hwmMiB() })
	overRSS := median(func(r round) float64 { return r.oversize.rssMiB() })
	b.Logf("median peak RSS (VmHWM): idle %.1f MiB, 300 small JSON clients %.1f MiB, 300 oversize clients %.1f MiB (%.2fx small; sampled VmRSS max %.1f MiB); target < 200 MiB: %s",
		idle, small, over, over/small, overRSS, map[bool]string{true: "met", false: "missed"}[over < 200])
	b.ReportMetric(idle, "idle-MiB")
	b.ReportMetric(small, "small-MiB")
	b.ReportMetric(over, "oversize-MiB")
	b.ReportMetric(over/small, "oversize/small")
}

// procMemory reads a process's memory from /proc.
type procMemory struct{ pid int }

// memPeak is a phase's peak: VmHWM after it (reset before), and the largest
// VmRSS sampled every 20 ms during it, in bytes.
type memPeak struct{ hwm, rss int64 }

func (m memPeak) hwmMiB() float64 { return float64(m.hwm) / (1 << 20) }
func (m memPeak) rssMiB() float64 { return float64(m.rss) / (1 << 20) }
func (m memPeak) String() string {
	return fmt.Sprintf("peak %.1f MiB (sampled %.1f)", m.hwmMiB(), m.rssMiB())
}

func (p procMemory) status() (rss, hwm int64, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return 0, 0, fmt.Errorf("reading the API's memory: %w", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm, nil
}

// during runs load and returns the process's memory peak over it.
func (p procMemory) during(b *testing.B, load func()) memPeak {
	// "5" resets the peak resident set (proc(5), clear_refs).
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.pid), []byte("5"), 0); err != nil {
		b.Fatalf("resetting the API's peak RSS: %v", err)
	}
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss, _, err := p.status(); err == nil && rss > peak.Load() {
				peak.Store(rss)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	load()
	close(stop)
	<-sampled
	_, hwm, err := p.status()
	if err != nil {
		b.Fatal(err)
	}
	return memPeak{hwm: hwm, rss: peak.Load()}
}

// loadCounts counts answers by status; status 0 is a request without an
// answer (the connection failed).
type loadCounts struct {
	mu       sync.Mutex
	byStatus map[int]int
	expected []int
}

func newLoadCounts(expected ...int) *loadCounts {
	return &loadCounts{byStatus: map[int]int{}, expected: expected}
}

func (l *loadCounts) add(status int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byStatus[status]++
}

// failed is whether more than 1 % of the requests got another answer than
// the expected ones (or none).
func (l *loadCounts) failed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	total, bad := 0, 0
	for status, n := range l.byStatus {
		total += n
		if !slices.Contains(l.expected, status) {
			bad += n
		}
	}
	return total == 0 || bad*100 > total
}

func (l *loadCounts) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]int, 0, len(l.byStatus))
	for k := range l.byStatus {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d: %d", k, l.byStatus[k])
	}
	return strings.Join(parts, ", ")
}

// smallJSONLoad has 300 keep-alive clients send retrieval queries for d.
func smallJSONLoad(addr, key string, d time.Duration) *loadCounts {
	counts := newLoadCounts(200)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: oversizeClients, MaxConnsPerHost: oversizeClients}}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range oversizeClients {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				req, _ := http.NewRequest("POST", "http://"+addr+"/api/v2/agents/support/retrieve", strings.NewReader(`{"query":"how long do refunds take?"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := client.Do(req)
				if err != nil {
					counts.add(0)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				counts.add(resp.StatusCode)
			}
		})
	}
	wg.Wait()
	return counts
}

// oversizeRequest is one kind of oversize request: its head and, for an
// upload, the start of its form.
type oversizeRequest struct {
	head      []byte
	formStart []byte
	chunked   bool
}

// oversizeLoad has 300 clients send 25 MiB bodies for d, each a new
// connection: a quarter each declared and chunked uploads, declared and
// chunked bodies to /healthz. A client stops sending when the answer comes.
func oversizeLoad(b *testing.B, addr, key string, d time.Duration) *loadCounts {
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	if err := mw.WriteField("type", "file"); err != nil {
		b.Fatal(err)
	}
	if _, err := mw.CreateFormFile("file", "huge.txt"); err != nil {
		b.Fatal(err)
	}
	head := func(path string, chunked bool, extra string) []byte {
		length := "Content-Length: " + strconv.Itoa(oversizeBytes)
		if chunked {
			length = "Transfer-Encoding: chunked"
		}
		return []byte("POST " + path + " HTTP/1.1\r\nHost: concierge\r\n" + length + "\r\n" + extra + "\r\n")
	}
	upload := "Authorization: Bearer " + key + "\r\nContent-Type: " + mw.FormDataContentType() + "\r\n"
	kinds := []oversizeRequest{
		{head: head("/api/v2/agents/support/sources", false, upload), formStart: form.Bytes()},
		{head: head("/api/v2/agents/support/sources", true, upload), formStart: form.Bytes(), chunked: true},
		{head: head("/healthz", false, "")},
		{head: head("/healthz", true, ""), chunked: true},
	}
	// Every write is one 64 KiB block, framed as a chunk when chunked.
	block := bytes.Repeat([]byte("a"), 64<<10)
	chunk := append(append([]byte(fmt.Sprintf("%x\r\n", len(block))), block...), "\r\n"...)

	counts := newLoadCounts(413, 503)
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := range oversizeClients {
		kind := kinds[i%len(kinds)]
		wg.Go(func() {
			for time.Now().Before(deadline) {
				counts.add(sendOversize(addr, kind, block, chunk))
			}
		})
	}
	wg.Wait()
	return counts
}

// sendOversize sends one oversize request on a new connection, reading the
// answer while it sends, and returns the answer's status (0 for none).
func sendOversize(addr string, r oversizeRequest, block, chunk []byte) int {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return 0
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	answered := make(chan struct{})
	go func() {
		write := func(p []byte) bool {
			select {
			case <-answered:
				return false
			default:
			}
			_, err := conn.Write(p)
			return err == nil
		}
		if !write(r.head) {
			return
		}
		if r.formStart != nil {
			start := r.formStart
			if r.chunked {
				start = append(append([]byte(fmt.Sprintf("%x\r\n", len(start))), start...), "\r\n"...)
			}
			if !write(start) {
				return
			}
		}
		for sent := 0; sent < oversizeBytes; sent += len(block) {
			p := block
			if r.chunked {
				p = chunk
			}
			if !write(p) {
				return
			}
		}
		if r.chunked {
			write([]byte("0\r\n\r\n"))
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	close(answered)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
