package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/core/domain"
)

const (
	relayStreams = 1000
	// relayRate is the events per second published over all sessions: a
	// tenth of 1,000 conversations answering at 20 tokens a second.
	relayRate = 2000
)

// BenchmarkRelay measures the live relay across pods. Pod B is a real
// serving stack (hub, relay, fiber); pod A is another Redis client
// publishing through its own EventBus, as the answer engine of another pod
// does. 1,000 live streams are open on pod B, one per conversation, read by
// HTTP clients in this process.
//
// Latency: each event carries the time pod A was about to publish it; the
// client takes the difference when it has read the event off the SSE
// stream. The baseline, in alternating rounds at the same rate, is a bare
// Redis PUBLISH read by one go-redis subscriber of 1,000 channels: the floor
// any relay through Redis pays.
//
// Memory: 1,000 idle streams are opened by a client in another process, so
// only the server's share is counted: Go heap and stacks, and RSS, before
// and after, divided by 1,000.
//
// The benchmark runs in a process of its own (inOwnProcess): after another
// benchmark in the same process, the memory figures included that one's
// memory being released (-242 KiB per stream after BenchmarkRetrieval).
func BenchmarkRelay(b *testing.B) {
	if inOwnProcess(b) {
		return
	}
	s := newStack(b, stackOptions{env: map[string]string{
		"CONCIERGE_LOG_LEVEL": "error", "CONCIERGE_RATE_LIMIT_API_PER_MINUTE": "100000000",
	}})
	tn := s.newTenant(domain.PlanStandard)
	agent := s.createAgent(tn, "support")
	seedConversations(b, s, tn.ID, agent.ID, "support", relayStreams)
	sessions := make([]string, relayStreams)
	for i := range sessions {
		sessions[i] = fmt.Sprintf("ses_%026d", i+1)
	}

	heap, rss := relayIdleMemory(b, s, tn, sessions)
	b.Logf("idle live streams: %.1f KiB Go heap+stacks, %.1f KiB RSS per stream", heap/1024, rss/1024)
	b.ReportMetric(heap/1024, "heap-KiB/stream")
	b.ReportMetric(rss/1024, "rss-KiB/stream")

	// Pod A: its own connection, its own bus.
	podA := goredisClient(b, s.env["CONCIERGE_REDIS_URL"])
	bus := redisadapter.NewEventBus(podA)
	relay := openRelayStreams(b, s, tn, sessions)
	base := newBaselineSubscriber(b, s.env["CONCIERGE_REDIS_URL"], relayStreams)

	// Each session's events are one long answer: seq goes up by one, as a
	// stream expects (a jump would be a hole to fill).
	seqs := make([]int, relayStreams)
	publishRelay := func(i int) {
		seqs[i%relayStreams]++
		ev := domain.SessionEvent{Type: domain.EventToken, SessionID: sessions[i%relayStreams], MessageID: "msg_bench", Seq: seqs[i%relayStreams],
			Content: strconv.FormatInt(time.Now().UnixNano(), 10)}
		if err := bus.Publish(context.Background(), ev); err != nil {
			b.Fatal(err)
		}
	}
	publishBase := func(i int) {
		if err := podA.Publish(context.Background(), base.channel(i%relayStreams), strconv.FormatInt(time.Now().UnixNano(), 10)).Err(); err != nil {
			b.Fatal(err)
		}
	}

	drive := func(d time.Duration, publish func(i int)) {
		interval := time.Second / relayRate
		start := time.Now()
		for i := 0; ; i++ {
			next := start.Add(time.Duration(i) * interval)
			if next.Sub(start) >= d {
				return
			}
			if wait := time.Until(next); wait > 0 {
				time.Sleep(wait)
			}
			publish(i)
		}
	}
	// Warm up both paths: connections, the hub's channels, GC pacing.
	drive(benchWarmup, publishRelay)
	drive(benchWarmup, publishBase)

	type round struct{ base, relay latencies }
	var rounds []round
	for range benchRounds() {
		var r round
		base.record(true)
		drive(benchDuration(), publishBase)
		time.Sleep(100 * time.Millisecond) // the last events in flight
		r.base = base.take()
		relay.record(true)
		drive(benchDuration(), publishRelay)
		time.Sleep(100 * time.Millisecond)
		r.relay = relay.take()
		b.Logf("round: baseline %s | relay %s", r.base, r.relay)
		if want := int(float64(relayRate) * benchDuration().Seconds() * 0.99); r.relay.n < want || r.base.n < want {
			b.Fatalf("events lost: relay %d, baseline %d, published %d", r.relay.n, r.base.n, int(float64(relayRate)*benchDuration().Seconds()))
		}
		rounds = append(rounds, r)
	}
	slices.SortFunc(rounds, func(x, y round) int { return int(x.relay.p99 - y.relay.p99) })
	m := rounds[len(rounds)/2]
	b.Logf("median round: baseline %s | relay %s | overhead p50 %+.2f ms, p99 %+.2f ms",
		m.base, m.relay, ms(m.relay.p50-m.base.p50), ms(m.relay.p99-m.base.p99))
	b.ReportMetric(ms(m.relay.p50), "relay-p50-ms")
	b.ReportMetric(ms(m.relay.p99), "relay-p99-ms")
	b.ReportMetric(ms(m.base.p50), "baseline-p50-ms")
	b.ReportMetric(ms(m.base.p99), "baseline-p99-ms")
}

// latencies summarises one round.
type latencies struct {
	n        int
	p50, p99 time.Duration
	max      time.Duration
}

func (l latencies) String() string {
	return fmt.Sprintf("%d events, p50 %.3f ms, p99 %.3f ms, max %.2f ms", l.n, ms(l.p50), ms(l.p99), ms(l.max))
}

// recorder collects latencies from many goroutines while recording is on.
type recorder struct {
	on   atomic.Bool
	mu   sync.Mutex
	lats []time.Duration
}

func (r *recorder) record(on bool) { r.on.Store(on) }

func (r *recorder) add(sentNanos string) {
	sent, err := strconv.ParseInt(sentNanos, 10, 64)
	if err != nil || !r.on.Load() {
		return
	}
	d := time.Duration(time.Now().UnixNano() - sent)
	r.mu.Lock()
	r.lats = append(r.lats, d)
	r.mu.Unlock()
}

// take stops recording and summarises what was recorded.
func (r *recorder) take() latencies {
	r.on.Store(false)
	r.mu.Lock()
	lats := r.lats
	r.lats = nil
	r.mu.Unlock()
	slices.Sort(lats)
	if len(lats) == 0 {
		return latencies{}
	}
	return latencies{n: len(lats), p50: lats[len(lats)/2], p99: lats[len(lats)*99/100], max: lats[len(lats)-1]}
}

// openRelayStreams opens one live stream per session on the stack and
// records the latency of every token read from them.
func openRelayStreams(b *testing.B, s *stack, tn tenant, sessions []string) *recorder {
	b.Helper()
	rec := &recorder{}
	followSessions(b, s, tn, sessions, func(body io.Reader) {
		r := bufio.NewReader(body)
		const prefix = `data: {"type":"token","content":"`
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				return
			}
			if rest, ok := strings.CutPrefix(string(line), prefix); ok {
				rec.add(rest[:strings.IndexByte(rest, '"')])
			}
		}
	})
	return rec
}

// followSessions opens the v2 live stream of every session at once, each
// read by read on a goroutine of its own until the benchmark ends, and
// returns once every stream answered 200 (failing b otherwise).
func followSessions(b *testing.B, s *stack, tn tenant, sessions []string, read func(body io.Reader)) {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: len(sessions)}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	b.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	opened := make(chan error, len(sessions))
	for _, session := range sessions {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", s.base+"/api/v2/conversations/"+session+"/events", nil)
			req.Header.Set("Authorization", "Bearer "+tn.Key)
			resp, err := client.Do(req)
			if err == nil && resp.StatusCode != 200 {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
			opened <- err
			if err != nil {
				return
			}
			defer resp.Body.Close()
			read(resp.Body)
		})
	}
	for range sessions {
		if err := <-opened; err != nil {
			b.Fatalf("opening a live stream: %v", err)
		}
	}
}

// baselineSubscriber is one go-redis subscriber of n channels of its own.
type baselineSubscriber struct {
	*recorder
}

func (baselineSubscriber) channel(i int) string { return fmt.Sprintf("bench:baseline:%d", i) }

func newBaselineSubscriber(b *testing.B, url string, n int) baselineSubscriber {
	b.Helper()
	client := goredisClient(b, url)
	sub := baselineSubscriber{recorder: &recorder{}}
	channels := make([]string, n)
	for i := range channels {
		channels[i] = sub.channel(i)
	}
	ps := client.Subscribe(context.Background(), channels...)
	for range n {
		if _, err := ps.Receive(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := ps.ReceiveMessage(context.Background())
			if err != nil {
				return
			}
			sub.add(msg.Payload)
		}
	}()
	b.Cleanup(func() {
		_ = ps.Close()
		<-done
	})
	return sub
}

// relayIdleMemory opens one idle live stream per session from a client in
// another process and returns the server's memory per stream: Go heap and
// stacks in use, and RSS.
func relayIdleMemory(b *testing.B, s *stack, tn tenant, sessions []string) (heap, rss float64) {
	b.Helper()
	measure := func() (float64, float64) {
		runtime.GC()
		debug.FreeOSMemory()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapInuse + m.StackInuse), float64(processRSS(b))
	}
	urls, err := os.CreateTemp(b.TempDir(), "streams")
	if err != nil {
		b.Fatal(err)
	}
	for _, session := range sessions {
		fmt.Fprintln(urls, s.base+"/api/v2/conversations/"+session+"/events")
	}
	urls.Close()

	heap0, rss0 := measure()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRelayBenchClientHelperProcess$")
	cmd.Env = append(os.Environ(), relayClientURLs+"="+urls.Name(), relayClientAuth+"=Bearer "+tn.Key)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		b.Fatalf("stream client: %q, %v", line, err)
	}
	time.Sleep(time.Second) // settled: every stream wrote its first bytes
	heap1, rss1 := measure()
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatalf("stream client: %v", err)
	}
	n := float64(len(sessions))
	return (heap1 - heap0) / n, (rss1 - rss0) / n
}

// processRSS is this process's resident set in bytes.
func processRSS(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	b.Skip("no VmRSS in /proc/self/status")
	return 0
}

const (
	relayClientURLs = "CONCIERGE_BENCH_STREAM_URLS"
	relayClientAuth = "CONCIERGE_BENCH_STREAM_AUTH"
)

// TestRelayBenchClientHelperProcess is not a test: BenchmarkRelay starts
// the test binary on it to hold idle live streams open from another
// process. It opens every URL, prints "ready" once each answered, and holds
// them until its stdin closes.
func TestRelayBenchClientHelperProcess(t *testing.T) {
	file := os.Getenv(relayClientURLs)
	if file == "" {
		t.Skip("helper process for BenchmarkRelay")
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	urls := strings.Fields(string(raw))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: len(urls)}}
	var wg sync.WaitGroup
	errs := make(chan error, len(urls))
	for _, url := range urls {
		wg.Go(func() {
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("Authorization", os.Getenv(relayClientAuth))
			resp, err := client.Do(req)
			if err == nil && resp.StatusCode != 200 {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
			errs <- err
			if err == nil {
				go func() { _, _ = io.Copy(io.Discard, resp.Body) }()
			}
		})
	}
	wg.Wait()
	for range urls {
		if err := <-errs; err != nil {
			fmt.Fprintln(os.Stderr, "opening a stream:", err)
			os.Exit(1)
		}
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}
