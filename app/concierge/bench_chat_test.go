package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/conciergehq/concierge/core/domain"
)

// seedKnowledge gives the agent n text sources with varied support content,
// so retrieval ranks among many candidates as a real knowledge base would.
func seedKnowledge(b *testing.B, s *stack, workspaceID, agentID string, n int) {
	b.Helper()
	topics := []string{"shipping", "returns", "invoices", "passwords", "warranty", "payments", "accounts", "delivery", "discounts", "subscriptions"}
	err := s.sys.db.Exec(`
		INSERT INTO sources (id, workspace_id, agent_id, type, name, content, question, answer, status, status_reason, chunk_count, token_count, created_at, updated_at)
		SELECT 'src_' || lpad(i::text, 26, '0'), ?, ?, 'text', 'Guide ' || i || ': ' || (?::text[])[1 + i % 10],
		       'Article ' || i || ' about ' || (?::text[])[1 + i % 10] || '. Customers asking about ' || (?::text[])[1 + i % 10] ||
		       ' should know that requests are handled within ' || (1 + i % 7) || ' business days. Contact support for case ' || i || '.',
		       '', '', 'READY', '', 1, 40, now(), now()
		FROM generate_series(1, ?) AS i`, workspaceID, agentID, pgText(topics), pgText(topics), pgText(topics), n).Error
	if err != nil {
		b.Fatal(err)
	}
	if err := s.sys.db.Exec("ANALYZE sources").Error; err != nil {
		b.Fatal(err)
	}
}

func pgText(xs []string) string { return "{" + strings.Join(xs, ",") + "}" }

// firstToken opens a streamed chat and returns the time until the first
// token event arrived, reading the rest of the stream to its end.
func firstToken(client *http.Client, url, key, message string) (time.Duration, error) {
	body := fmt.Sprintf(`{"agent":"support","message":%q,"stream":true}`, message)
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	var ttft time.Duration
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if ttft == 0 && strings.HasPrefix(line, `data: {"type":"token"`) {
			ttft = time.Since(start)
		}
		if strings.HasPrefix(line, `data: {"type":"done"`) || strings.HasPrefix(line, `data: {"type":"error"`) {
			break
		}
	}
	if ttft == 0 {
		return 0, fmt.Errorf("no token event")
	}
	return ttft, sc.Err()
}

// BenchmarkChatFirstToken measures the service's time to first token: from
// sending the request to reading the first token event, with N streams open
// at once. The embedded model paces its tokens at 20 ms (a reply lasts about
// a second, as with a hosted model) but sends the first one at once, so the
// figure is the service's own overhead: authentication, session, storing the
// question, retrieval over 1,000 chunks, composing, and the first flush.
func BenchmarkChatFirstToken(b *testing.B) {
	s := newStack(b, stackOptions{env: map[string]string{
		"CONCIERGE_LOG_LEVEL": "error", "CONCIERGE_RATE_LIMIT_API_PER_MINUTE": "100000000",
		"CONCIERGE_LOCAL_TOKEN_DELAY": "20ms",
	}})
	tn := s.newTenant(domain.PlanStandard)
	var agent agentBody
	s.do("POST", "/api/v2/agents", map[string]any{"slug": "support", "name": "Support"}, tn.auth()).decode(b, &agent)
	seedKnowledge(b, s, tn.ID, agent.ID, 1000)
	questions := []string{"How long do returns take?", "What about shipping delays?", "Can I get my invoices?", "Is my warranty valid?", "How do payments work?"}

	for _, streams := range []int{1, 100} {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams, MaxConnsPerHost: streams}, Timeout: 30 * time.Second}
		run := func(d time.Duration) ([]time.Duration, int) {
			var (
				mu       sync.Mutex
				lats     []time.Duration
				errs     int
				wg       sync.WaitGroup
				deadline = time.Now().Add(d)
			)
			for w := range streams {
				wg.Go(func() {
					for i := w; time.Now().Before(deadline); i += streams {
						ttft, err := firstToken(client, s.base+"/api/v2/chat", tn.Key, questions[i%len(questions)])
						mu.Lock()
						if err != nil {
							errs++
						} else {
							lats = append(lats, ttft)
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			slices.Sort(lats)
			return lats, errs
		}
		run(benchWarmup)
		lats, errs := run(benchDuration())
		if errs > 0 || len(lats) == 0 {
			b.Fatalf("%d streams: %d errors", streams, errs)
		}
		p50, p99 := lats[len(lats)/2], lats[len(lats)*99/100]
		b.Logf("%3d concurrent streams: first token p50 %.2f ms, p99 %.2f ms over %d answers", streams, ms(p50), ms(p99), len(lats))
		b.ReportMetric(ms(p50), fmt.Sprintf("p50-ms/%d-streams", streams))
		b.ReportMetric(ms(p99), fmt.Sprintf("p99-ms/%d-streams", streams))
	}
}

// insertBaseline is a bare fiber handler doing one PostgreSQL INSERT, the
// floor of any write endpoint.
func insertBaseline(b *testing.B, dsn, conversationID, workspaceID string) string {
	b.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Post("/baseline", func(c *fiber.Ctx) error {
		var body struct {
			Message string `json:"message"`
		}
		if err := json.Unmarshal(c.Body(), &body); err != nil {
			return err
		}
		id := domain.NewID(domain.PrefixMessage)
		_, err := pool.Exec(c.UserContext(), `INSERT INTO messages (id, workspace_id, conversation_id, role, content, citations, tokens_in, tokens_out, created_at)
			VALUES ($1, $2, $3, 'USER', $4, '[]', 0, 0, now())`, id, workspaceID, conversationID, body.Message)
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"id": id})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	b.Cleanup(func() { _ = app.Shutdown() })
	return "http://" + ln.Addr().String()
}

func BenchmarkChatThroughput(b *testing.B) {
	s := newStack(b, stackOptions{env: map[string]string{"CONCIERGE_LOG_LEVEL": "error", "CONCIERGE_RATE_LIMIT_API_PER_MINUTE": "100000000"}})
	tn := s.newTenant(domain.PlanStandard)
	var agent agentBody
	s.do("POST", "/api/v2/agents", map[string]any{"slug": "support", "name": "Support"}, tn.auth()).decode(b, &agent)
	seedKnowledge(b, s, tn.ID, agent.ID, 1000)
	session := s.startSession(tn, "support")
	baseURL := insertBaseline(b, s.env["CONCIERGE_DATABASE_URL"], session, tn.ID)
	questions := []string{"How long do returns take?", "What about shipping delays?", "Can I get my invoices?", "Is my warranty valid?", "How do payments work?"}

	b.ResetTimer()
	baseline, chat := compare(b, "baseline: fiber + 1 pgx INSERT", "POST /api/v2/chat (JSON)", 200, func(i int64) *http.Request {
		req, _ := http.NewRequest("POST", baseURL+"/baseline", strings.NewReader(fmt.Sprintf(`{"message":%q}`, questions[i%5])))
		req.Header.Set("Content-Type", "application/json")
		return req
	}, func(i int64) *http.Request {
		// A new conversation per request, as independent users would start them.
		req, _ := http.NewRequest("POST", s.base+"/api/v2/chat", strings.NewReader(fmt.Sprintf(`{"agent":"support","message":%q}`, questions[i%5])))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tn.Key)
		return req
	})
	ratio := chat.RPS / baseline.RPS
	b.Logf("median round: %s | %s", baseline, chat)
	b.Logf("non-streaming chat throughput %.0f %% of baseline (target >= 30 %%)", ratio*100)
	b.ReportMetric(chat.RPS, "chats/s")
	b.ReportMetric(ratio*100, "%-of-baseline")
}
