package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/httpapi/openapi/openapitest"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/core/domain"
)

// A cluster is Concierge deployed as in production: API pods (`concierge
// serve`) and workers (`concierge worker`) as real processes of this test
// binary (re-executed on TestAdmHelperProcess), sharing one fresh database
// and one Redis database, with nothing sticky between them. Tests talk to
// any pod over HTTP and SSE, and may stop, start or kill processes.
type cluster struct {
	t       testing.TB
	env     map[string]string
	pods    []*clusterProc
	workers []*clusterProc
	spec    *openapitest.Validator
	client  *http.Client
}

type clusterOptions struct {
	pods, workers int
	// redisURL replaces the test's private Redis database (for a Redis the
	// test restarts).
	redisURL string
	// env adds to or overrides the processes' configuration.
	env map[string]string
}

// clusterProc is one process of the cluster.
type clusterProc struct {
	name string
	args []string
	env  map[string]string
	// base is a pod's URL (http://127.0.0.1:port); "" for workers.
	base string

	mu     sync.Mutex
	cmd    *exec.Cmd
	output *syncBuffer
	exited chan struct{}
	// stopped marks an exit the test asked for; killed, one by SIGKILL,
	// whose exit status says nothing.
	stopped, killed bool
}

// newCluster starts the processes and waits until every pod is ready.
func newCluster(t testing.TB, opts clusterOptions) *cluster {
	t.Helper()
	redisURL := opts.redisURL
	if redisURL == "" {
		redisURL = redistest.URL(t)
	}
	env := testEnv(t, redisURL, opts.env)
	c := &cluster{t: t, env: env, spec: openapitest.New(t), client: &http.Client{Timeout: 30 * time.Second}}
	for i := range opts.pods {
		p := &clusterProc{name: fmt.Sprintf("pod %c", 'A'+i), args: []string{"serve"}, env: map[string]string{}}
		for k, v := range env {
			p.env[k] = v
		}
		addr := freeAddr(t)
		p.env["CONCIERGE_HTTP_ADDR"] = addr
		p.base = "http://" + addr
		c.pods = append(c.pods, p)
	}
	for i := range opts.workers {
		p := &clusterProc{name: fmt.Sprintf("worker %d", i+1), args: []string{"worker"}, env: env}
		c.workers = append(c.workers, p)
	}
	t.Cleanup(c.stopAll)
	for _, p := range append(append([]*clusterProc{}, c.workers...), c.pods...) {
		c.start(p)
	}
	for _, p := range c.pods {
		c.waitReady(p)
	}
	return c
}

// start runs the process.
func (c *cluster) start(p *clusterProc) {
	c.t.Helper()
	cmd := helperCommand(context.Background(), p.env, p.args...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("starting %s: %v", p.name, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.output, p.exited, p.stopped = cmd, out, exited, false
	p.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
}

// waitReady waits until a pod answers /readyz.
func (c *cluster) waitReady(p *clusterProc) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-p.exited:
			c.t.Fatalf("%s exited while starting:\n%s", p.name, p.output.String())
		default:
		}
		resp, err := c.client.Get(p.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s not ready after 30 s (last error %v):\n%s", p.name, err, p.output.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends a process as an orchestrator does (SIGTERM, then SIGKILL after
// 15 s) and returns how long it took.
func (c *cluster) stop(p *clusterProc) time.Duration {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.stopped = true
	p.mu.Unlock()
	if cmd == nil {
		return 0
	}
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		c.t.Errorf("%s did not stop within 15 s of SIGTERM", p.name)
	}
	return time.Since(start)
}

// kill ends a process at once, as a crash or an out-of-memory kill does:
// nothing of its shutdown runs.
func (c *cluster) kill(p *clusterProc) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.stopped, p.killed = true, true
	p.mu.Unlock()
	_ = cmd.Process.Kill()
	<-exited
}

// stopAll stops every process and reports what went wrong in them: a
// non-zero exit the test did not cause, or a data race.
func (c *cluster) stopAll() {
	for _, p := range append(append([]*clusterProc{}, c.pods...), c.workers...) {
		c.stop(p)
		p.mu.Lock()
		cmd, out := p.cmd, p.output
		p.mu.Unlock()
		if cmd == nil {
			continue
		}
		text := out.String()
		if strings.Contains(text, "WARNING: DATA RACE") {
			c.t.Errorf("%s had a data race:\n%s", p.name, text)
		} else if code := cmd.ProcessState.ExitCode(); code != 0 && !p.killed {
			c.t.Errorf("%s exited with %d:\n%s", p.name, code, text)
		} else if c.t.Failed() {
			c.t.Logf("%s output:\n%s", p.name, text)
		}
	}
}

// do sends a request to a pod and checks the answer against the OpenAPI
// document; body as for stack.do.
func (c *cluster) do(p *clusterProc, method, path string, body any, h header) response {
	c.t.Helper()
	return sendRequest(c.t, c.client, c.spec, method, p.base+path, body, h)
}

func (c *cluster) must(r response, want int) {
	c.t.Helper()
	if r.Status != want {
		c.t.Fatalf("status %d, want %d: %s", r.Status, want, r.Body)
	}
}

// newTenant creates a workspace with the operator CLI on the cluster's
// database.
func (c *cluster) newTenant(plan domain.Plan) tenant {
	c.t.Helper()
	var ws admWorkspace
	admMustJSON(c.t, c.env, &ws, "admin", "workspace", "create", "--name", "tenant "+plan.Title(), "--plan", string(plan), "--json")
	return tenant{ID: ws.WorkspaceID, Key: ws.APIKey, KeyID: ws.APIKeyID, WebhookSecret: ws.WebhookSecret}
}

// supportAgent creates the agent "support" on pod p with knowledge long
// enough for answers of many tokens, and waits until a worker indexed it.
func (c *cluster) supportAgent(p *clusterProc, tn tenant) {
	c.t.Helper()
	c.must(c.do(p, "POST", "/api/v2/agents", map[string]any{"slug": "support", "name": "Acme Support"}, tn.auth()), 201)
	for _, src := range []map[string]any{
		{"type": "text", "name": "Shipping policy", "content": "Acme ships orders within 1 business day of payment. Standard shipping takes 3 to 5 business days and costs 4 euros; express shipping takes 1 to 2 business days and costs 9 euros. Shipping is free for orders over 50 euros. You receive a tracking link by email as soon as the parcel leaves our warehouse, and you can follow it on the Orders page of your account."},
		{"type": "text", "name": "Returns and refunds", "content": "You can return any unused item within 30 days of delivery. Start a return from the Orders page of your account and print the prepaid label. Refunds are issued to the original payment method within 5 business days of the return reaching our warehouse."},
	} {
		c.must(c.do(p, "POST", "/api/v2/agents/support/sources", src, tn.auth()), 201)
	}
	c.waitSourcesReady(p, tn, "support")
}

// waitSourcesReady waits until a worker indexed every source of an agent.
func (c *cluster) waitSourcesReady(p *clusterProc, tn tenant, agent string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var list listBody[map[string]any]
		r := c.do(p, "GET", "/api/v2/agents/"+agent+"/sources", nil, tn.auth())
		c.must(r, 200)
		r.decode(c.t, &list)
		ready := 0
		for _, src := range list.Data {
			switch src["status"] {
			case "READY":
				ready++
			case "FAILED":
				c.t.Fatalf("source failed to index: %v", src)
			}
		}
		if ready == len(list.Data) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("sources of %s not indexed after 30 s: %v", agent, list.Data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startSession opens a v1 session with the support agent on pod p.
func (c *cluster) startSession(p *clusterProc, tn tenant) string {
	c.t.Helper()
	r := c.do(p, "POST", "/api/v1/sessions", map[string]any{"slug": "support"}, tn.auth())
	c.must(r, 200)
	var out struct {
		SessionID string `json:"sessionId"`
	}
	r.decode(c.t, &out)
	return out.SessionID
}

// liveStream is an SSE response a test reads event by event, as a
// browser's EventSource would.
type liveStream struct {
	t      testing.TB
	resp   *http.Response
	events chan sseEvent
	cancel context.CancelFunc
	// ended is closed when the server ended the stream (or close was
	// called); err says how reading stopped.
	ended chan struct{}
	err   error

	rawMu sync.Mutex
	raw   bytes.Buffer
}

// body is what the stream carried so far, as read off the wire.
func (ls *liveStream) body() []byte {
	ls.rawMu.Lock()
	defer ls.rawMu.Unlock()
	return bytes.Clone(ls.raw.Bytes())
}

// openLive opens an SSE stream with GET (or POST with a body) and fails
// the test unless it answers 200 with text/event-stream.
func openLive(t testing.TB, method, url string, body any, h header) *liveStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req := newRequest(t, ctx, method, url, body, h)
	// No client timeout: a live stream has no end.
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("%s %s: %d %s: %s", method, url, resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	ls := &liveStream{t: t, resp: resp, events: make(chan sseEvent, 4096), cancel: cancel, ended: make(chan struct{})}
	go ls.read()
	t.Cleanup(ls.close)
	return ls
}

func (ls *liveStream) read() {
	defer close(ls.ended)
	err := scanSSE(ls.resp.Body, func(line string) {
		ls.rawMu.Lock()
		ls.raw.WriteString(line + "\n")
		ls.rawMu.Unlock()
	}, func(ev sseEvent) bool {
		ls.events <- ev
		return true
	})
	if err == nil {
		err = io.EOF
	}
	ls.err = err
}

// next returns the next event, failing the test after 15 s or if the
// stream ended.
func (ls *liveStream) next() sseEvent {
	ls.t.Helper()
	select {
	case ev := <-ls.events:
		return ev
	case <-time.After(15 * time.Second):
		ls.t.Fatal("no event within 15 s")
	case <-ls.ended:
		select {
		case ev := <-ls.events:
			return ev
		default:
		}
		ls.t.Fatalf("the stream ended: %v", ls.err)
	}
	return sseEvent{}
}

// nextN returns the next n events.
func (ls *liveStream) nextN(n int) []sseEvent {
	ls.t.Helper()
	out := make([]sseEvent, 0, n)
	for range n {
		out = append(out, ls.next())
	}
	return out
}

// until returns the events up to and including the first one for which
// last is true.
func (ls *liveStream) until(last func(sseEvent) bool) []sseEvent {
	ls.t.Helper()
	var out []sseEvent
	for {
		ev := ls.next()
		out = append(out, ev)
		if last(ev) {
			return out
		}
	}
}

// quiet fails the test if an event arrives within d.
func (ls *liveStream) quiet(d time.Duration) {
	ls.t.Helper()
	select {
	case ev := <-ls.events:
		ls.t.Fatalf("unexpected event %s %v", ev.ID, ev.Data)
	case <-time.After(d):
	}
}

// waitEnd waits until the server ends the stream and returns how reading
// stopped (io.EOF for a clean end).
func (ls *liveStream) waitEnd(d time.Duration) error {
	ls.t.Helper()
	select {
	case <-ls.ended:
		return ls.err
	case <-time.After(d):
		ls.t.Fatalf("the stream is still open after %s", d)
	}
	return nil
}

// close drops the connection, as a client that leaves.
func (ls *liveStream) close() {
	ls.cancel()
	ls.resp.Body.Close()
	<-ls.ended
}

// isDone recognises an answer's done event.
func isDone(ev sseEvent) bool { return ev.Data["type"] == "done" }

// eventIDs lists events' ids, for messages.
func eventIDs(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

// sameEvents fails unless got and want are the same events (ids and data).
func sameEvents(t testing.TB, what string, got, want []sseEvent) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d\n got %v\nwant %v", what, len(got), len(want), eventIDs(got), eventIDs(want))
	}
	for i := range got {
		g, _ := json.Marshal(got[i].Data)
		w, _ := json.Marshal(want[i].Data)
		if got[i].ID != want[i].ID || !bytes.Equal(g, w) {
			t.Fatalf("%s: event %d is %s %s, want %s %s", what, i, got[i].ID, g, want[i].ID, w)
		}
	}
}

// answerText checks an answer's events as a client needs them: tokens
// numbered 1..n in order, then done n+1, and returns the tokens joined.
func answerText(t testing.TB, evs []sseEvent) string {
	t.Helper()
	var text strings.Builder
	if len(evs) == 0 {
		t.Fatal("no answer events")
	}
	done := evs[len(evs)-1]
	msgID, _ := done.Data["messageId"].(string)
	for i, ev := range evs {
		if want := fmt.Sprintf("%s:%d", msgID, i+1); ev.ID != want {
			t.Fatalf("answer event %d has id %q, want %q", i, ev.ID, want)
		}
		switch {
		case i < len(evs)-1 && ev.Data["type"] == "token":
			text.WriteString(ev.Data["content"].(string))
		case i == len(evs)-1 && ev.Data["type"] == "done":
		default:
			t.Fatalf("answer event %d is %v", i, ev.Data)
		}
	}
	if done.Data["message"] != text.String() {
		t.Fatalf("tokens %q, done.message %q", text.String(), done.Data["message"])
	}
	return text.String()
}
