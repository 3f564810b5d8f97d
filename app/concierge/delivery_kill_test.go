package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/conciergehq/concierge/core/domain"
)

// flakyReceiver is a helpdesk that fails 30 % of requests and deduplicates
// by webhook-id, as the API guide tells receivers to. Of the failures, a
// third answer 500, a third drop the connection before processing, and a
// third process the delivery and then drop the connection, so the sender
// never learns it arrived and sends it again.
type flakyReceiver struct {
	*httptest.Server

	mu        sync.Mutex
	rng       *rand.Rand
	verifier  *standardwebhooks.Webhook
	received  map[string]int    // requests per webhook-id
	processed map[string]int    // times each delivery was processed: must be 1
	bodies    map[string][]byte // the first body per webhook-id
	sessions  map[string]string // webhook-id -> data.conversation.id
	problems  []string          // bad signatures, changed bodies, missing headers
	outcomes  map[string]int
	inFlight  int
	forced    int // requests failed at once (see serve)
}

func newFlakyReceiver(t *testing.T, seed uint64) *flakyReceiver {
	t.Helper()
	rc := &flakyReceiver{
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), received: map[string]int{}, processed: map[string]int{},
		bodies: map[string][]byte{}, sessions: map[string]string{}, outcomes: map[string]int{},
	}
	rc.Server = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *flakyReceiver) setSecret(secret string) error {
	v, err := standardwebhooks.NewWebhook(secret)
	rc.mu.Lock()
	rc.verifier = v
	rc.mu.Unlock()
	return err
}

func (rc *flakyReceiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	id := r.Header.Get("webhook-id")
	rc.mu.Lock()
	latency := time.Duration(rc.rng.IntN(250)) * time.Millisecond
	roll := rc.rng.Float64()
	if err := rc.verifier.Verify(body, r.Header); err != nil {
		rc.problems = append(rc.problems, fmt.Sprintf("%s: signature: %v", id, err))
	}
	if r.Header.Get("Idempotency-Key") != id || !domain.ValidID(domain.PrefixDelivery, id) {
		rc.problems = append(rc.problems, fmt.Sprintf("%q: Idempotency-Key %q", id, r.Header.Get("Idempotency-Key")))
	}
	if first, ok := rc.bodies[id]; ok && !bytes.Equal(first, body) {
		rc.problems = append(rc.problems, id+": the body changed between attempts")
	} else if !ok {
		rc.bodies[id] = body
	}
	rc.received[id]++
	// The first two requests fail at once: their retries are logged
	// before the first kill (at least 0.3 s after the start), so the check
	// that no secret reaches the logs always reads some failures. Left to
	// chance, every failure may coincide with a kill and go unlogged.
	if rc.forced < 2 {
		rc.forced++
		rc.outcomes["500 at once"]++
		rc.mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	rc.inFlight++
	rc.mu.Unlock()
	defer func() {
		rc.mu.Lock()
		rc.inFlight--
		rc.mu.Unlock()
	}()

	// Slow enough that a worker killed at a random moment is often in the
	// middle of a delivery.
	time.Sleep(latency)
	switch {
	case roll < 0.10:
		rc.count("500")
		w.WriteHeader(http.StatusInternalServerError)
	case roll < 0.20:
		rc.count("dropped")
		dropConnection(w)
	case roll < 0.30:
		rc.process(id, body)
		rc.count("processed, answer lost")
		dropConnection(w)
	default:
		rc.process(id, body)
		rc.count("200")
		w.WriteHeader(http.StatusOK)
	}
}

// process handles a delivery once per webhook-id; a repeat is acknowledged
// without processing, as an idempotent receiver does.
func (rc *flakyReceiver) process(id string, body []byte) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if _, done := rc.sessions[id]; done {
		rc.outcomes["duplicate acknowledged"]++
		return
	}
	var env struct {
		Type string `json:"type"`
		Data struct {
			Conversation struct {
				ID string `json:"id"`
			} `json:"conversation"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Type != domain.EventHandoffRequested {
		rc.problems = append(rc.problems, fmt.Sprintf("%s: body %s (%v)", id, body, err))
	}
	rc.sessions[id] = env.Data.Conversation.ID
	rc.processed[id]++
}

func (rc *flakyReceiver) count(outcome string) {
	rc.mu.Lock()
	rc.outcomes[outcome]++
	rc.mu.Unlock()
}

func (rc *flakyReceiver) busy() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.inFlight
}

func dropConnection(w http.ResponseWriter) {
	if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
		_ = conn.Close()
	}
}

// workerProcess is `concierge worker` in a child process (the test binary
// re-executed on TestAdmHelperProcess), wired exactly as main wires it.
type workerProcess struct {
	cmd    *exec.Cmd
	output *syncBuffer
}

func startWorkerProcess(t *testing.T, env map[string]string, output *syncBuffer) *workerProcess {
	t.Helper()
	cmd := helperCommand(context.Background(), env, "worker")
	cmd.Stdout, cmd.Stderr = output, output
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the worker process: %v", err)
	}
	p := &workerProcess{cmd: cmd, output: output}
	t.Cleanup(func() { p.kill() })
	return p
}

// kill sends SIGKILL (no shutdown, no cleanup: in-flight tasks are left
// active in Redis, as after a node failure) and reaps the process.
func (p *workerProcess) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}

// stop asks for a graceful shutdown and waits for it.
func (p *workerProcess) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("worker exited with %v", err)
		}
	case <-time.After(15 * time.Second):
		p.kill()
		t.Error("the worker did not stop within 15s of SIGTERM")
	}
}

// Every handoff reaches a helpdesk that fails 30 % of requests, while the
// worker delivering them is killed with SIGKILL and restarted several times:
// each delivery ends DELIVERED, every idempotency key reaches the receiver,
// each is processed exactly once by the receiver's dedupe, every request is
// validly signed and every attempt of a delivery carries the same body.
func TestDeliveriesSurviveKilledWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills worker processes")
	}
	begin := time.Now()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	receiver := newFlakyReceiver(t, seed)
	s := newStack(t, stackOptions{env: map[string]string{
		// Test-only: the receiver listens on 127.0.0.1 over http.
		"CONCIERGE_DELIVERY_ALLOW_PRIVATE_ADDRESSES_FOR_TESTS": "true",
		// Seconds, not days: 50 ms doubling to 400 ms between attempts; an
		// attempt holds its delivery for 2 s; a delivery overdue by 1 s is
		// re-driven by the sweeper (a killed worker's, for one).
		"CONCIERGE_DELIVERY_RETRY_BASE":   "50ms",
		"CONCIERGE_DELIVERY_RETRY_CAP":    "400ms",
		"CONCIERGE_DELIVERY_TIMEOUT":      "1s",
		"CONCIERGE_DELIVERY_SWEEP_PERIOD": "500ms",
	}})
	tn := s.newTenant(domain.PlanStandard)
	s.createAgent(tn, "support")
	// The token in the URL stands for what receivers put there; like the
	// signing secret, it must never reach the logs.
	r, settings := s.integrations(tn, "PATCH", map[string]any{"helpdeskUrl": receiver.URL + "/hooks/concierge?token=tok_s3cr3t"})
	s.mustStatus(r, 200)
	if settings.SigningSecret == nil {
		t.Fatalf("no signing secret: %s", r.Body)
	}
	if err := receiver.setSecret(*settings.SigningSecret); err != nil {
		t.Fatal(err)
	}

	// Chaos: start a worker, let it run 0.3 to 1.2 s, then SIGKILL it the
	// moment the receiver is busy with one of its deliveries (or after at
	// most another 10 s: on a loaded machine a fresh worker built with the
	// race detector takes seconds to start and pick its first delivery up;
	// 3 s was not always enough), and restart it; then one last worker
	// that is left to finish. On a quiet machine the wait ends within a
	// second.
	const kills = 5
	output := &syncBuffer{}
	workerEnv := map[string]string{"CONCIERGE_LOG_LEVEL": "debug"}
	for k, v := range s.env {
		if k != "CONCIERGE_LOG_LEVEL" {
			workerEnv[k] = v
		}
	}
	var (
		chaosDone   = make(chan struct{})
		last        *workerProcess
		busyAtKills []int
	)
	go func() {
		defer close(chaosDone)
		for range kills {
			p := startWorkerProcess(t, workerEnv, output)
			time.Sleep(300*time.Millisecond + time.Duration(rng.IntN(900))*time.Millisecond)
			for wait := time.Now().Add(10 * time.Second); receiver.busy() == 0 && time.Now().Before(wait); {
				time.Sleep(time.Millisecond)
			}
			busyAtKills = append(busyAtKills, receiver.busy())
			p.kill()
		}
		last = startWorkerProcess(t, workerEnv, output)
	}()

	// Meanwhile visitors ask for a person, through the real API.
	const handoffs = 20
	sessions := map[string]bool{}
	for i := range handoffs {
		session := s.startSession(tn, "support")
		sessions[session] = true
		r := s.do("POST", "/api/chat/"+session+"/handoff", map[string]any{"name": fmt.Sprintf("Visitor %d", i), "email": fmt.Sprintf("v%d@example.com", i)}, nil)
		if r.Status/100 != 2 {
			t.Fatalf("handoff %d: %d %s", i, r.Status, r.Body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	<-chaosDone
	t.Logf("handoffs requested and %d workers killed after %v; receiver requests in flight at each kill: %v",
		kills, time.Since(begin).Round(time.Millisecond), busyAtKills)
	midDelivery := 0
	for _, n := range busyAtKills {
		if n > 0 {
			midDelivery++
		}
	}
	if midDelivery == 0 {
		t.Errorf("no worker was killed in the middle of a delivery (in flight at each kill: %v); the test proved less than it claims", busyAtKills)
	}

	var deliveries []deliveryBody
	deadline := time.Now().Add(45 * time.Second)
	for {
		r := s.do("GET", "/api/v2/deliveries?target=helpdesk&limit=100", nil, tn.auth())
		s.mustStatus(r, 200)
		var page listBody[deliveryBody]
		r.decode(t, &page)
		deliveries = page.Data
		pending := 0
		for _, d := range deliveries {
			if d.Status != "DELIVERED" {
				pending++
			}
		}
		if len(deliveries) == handoffs && pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 45s: %d deliveries, %d not DELIVERED: %s\nworker output:\n%s", len(deliveries), pending, r.Body, output.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	last.stop(t)

	receiver.mu.Lock()
	defer receiver.mu.Unlock()
	t.Logf("all %d delivered after %v; receiver outcomes %v", handoffs, time.Since(begin).Round(time.Millisecond), receiver.outcomes)
	for _, p := range receiver.problems {
		t.Errorf("receiver: %s", p)
	}
	requests, repeats := 0, 0
	for _, d := range deliveries {
		if receiver.processed[d.ID] != 1 {
			t.Errorf("delivery %s processed %d times by the receiver, want exactly once", d.ID, receiver.processed[d.ID])
		}
		if !sessions[d.ConversationID] || receiver.sessions[d.ID] != d.ConversationID {
			t.Errorf("delivery %s is about %s, the receiver saw %s", d.ID, d.ConversationID, receiver.sessions[d.ID])
		}
		delete(sessions, d.ConversationID)
		requests += receiver.received[d.ID]
		repeats += receiver.received[d.ID] - 1
		if d.Attempts < 1 || d.DeliveredAt == nil {
			t.Errorf("delivery %+v", d)
		}
	}
	if len(sessions) != 0 || len(receiver.processed) != handoffs {
		t.Errorf("handoffs without a delivery: %v; the receiver processed %d keys, want %d", sessions, len(receiver.processed), handoffs)
	}
	// The log of a delivery ends with the attempt the receiver accepted.
	for _, d := range deliveries {
		r := s.do("GET", "/api/v2/deliveries/"+d.ID, nil, tn.auth())
		s.mustStatus(r, 200)
		var got deliveryBody
		r.decode(t, &got)
		if n := len(got.Log); n == 0 || got.Log[n-1].StatusCode == nil || *got.Log[n-1].StatusCode != 200 || got.Log[n-1].Attempt > got.Attempts {
			t.Errorf("delivery %s log %s", d.ID, r.Body)
		}
	}
	t.Logf("%d requests for %d deliveries (%d repeats, of which the receiver's dedupe acknowledged %d after processing)",
		requests, handoffs, repeats, receiver.outcomes["duplicate acknowledged"])
	out := output.String()
	if strings.Contains(out, "panic") || strings.Contains(out, "DATA RACE") {
		t.Errorf("worker output:\n%s", out)
	}
	if !strings.Contains(out, "will retry") {
		t.Errorf("the workers logged no retry at debug level; the secret check below proves nothing:\n%.2000s", out)
	}
	secret := strings.TrimPrefix(*settings.SigningSecret, domain.PrefixWebhookSecret)
	for _, leak := range []string{secret, "tok_s3cr3t"} {
		if strings.Contains(out, leak) {
			t.Errorf("the worker logs hold %q", leak)
		}
	}
}
