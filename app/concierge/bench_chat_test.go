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

// seedKnowledge gives the agent n text sources: ten support topics, each
// written several ways, so retrieval ranks among many candidates as in a
// real knowledge base and every benchmark question has a real answer.
func seedKnowledge(b *testing.B, s *stack, workspaceID, agentID string, n int) {
	b.Helper()
	topics := []string{
		"Returns take %s business days to process once the parcel reaches our warehouse. You can return any unused item within 30 days of delivery, and the refund goes to your original payment method.",
		"Shipping delays of up to %s days can happen during holidays and sales. Standard shipping takes 3 to 5 business days and express shipping takes 1 to 2 business days.",
		"Invoices are available on the Billing page of your account for %s years. Each invoice can be downloaded as a PDF, and a copy is emailed when the order ships.",
		"The warranty is valid for %s years from the date of purchase. It covers manufacturing defects but not accidental damage or normal wear.",
		"Payments work with Visa, Mastercard, American Express and PayPal. Cards are charged when the order ships, and a failed payment is retried after %s days.",
		"Passwords must have at least %s characters. To reset your password, click Forgot password on the sign-in page and follow the link we email you.",
		"Accounts can have up to %s team members. The account owner can invite members from the Team page and remove them at any time.",
		"Delivery is made by our courier partners within %s business days. You receive a tracking link by email as soon as the parcel leaves the warehouse.",
		"Discount codes give up to %s percent off and apply to full-price items only. Only one code can be used per order.",
		"Subscriptions renew every month and can be cancelled at any time with %s days notice from the Subscriptions page.",
	}
	names := []string{"Returns", "Shipping", "Invoices", "Warranty", "Payments", "Passwords", "Accounts", "Delivery", "Discounts", "Subscriptions"}
	err := s.sys.db.Gorm.Exec(`
		INSERT INTO sources (id, workspace_id, agent_id, type, name, content, question, answer, status, status_reason, chunk_count, token_count, created_at, updated_at)
		SELECT 'src_' || lpad(i::text, 26, '0'), ?, ?, 'text', (?::text[])[1 + i % 10] || ' guide ' || i,
		       format((?::text[])[1 + i % 10], 2 + i % 7) || ' Reference ' || i || '.',
		       '', '', 'PENDING', '', 0, 0, now(), now()
		FROM generate_series(1, ?) AS i`, workspaceID, agentID, pgText(names), pgText(topics), n).Error
	if err != nil {
		b.Fatal(err)
	}
	// Indexed by the real pipeline (chunked, embedded, stored), as the
	// worker would.
	for i := 1; i <= n; i++ {
		ref := domain.SourceRef{WorkspaceID: workspaceID, SourceID: fmt.Sprintf("src_%026d", i)}
		if err := s.sys.indexer.Index(context.Background(), ref, true); err != nil {
			b.Fatal(err)
		}
	}
	// A knowledge base at rest: autovacuum has refreshed the GIN index's
	// statistics (see migration 00004), so the planner uses the index.
	if err := s.sys.db.Gorm.Exec("VACUUM ANALYZE chunks").Error; err != nil {
		b.Fatal(err)
	}
}

// pgText is a text[] literal with every element quoted.
func pgText(xs []string) string {
	quoted := make([]string, len(xs))
	for i, x := range xs {
		quoted[i] = `"` + strings.ReplaceAll(strings.ReplaceAll(x, `\`, `\\`), `"`, `\"`) + `"`
	}
	return "{" + strings.Join(quoted, ",") + "}"
}

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

// chatBenchStack is a stack with an agent of 1,000 chunks; tokenDelay paces
// the embedded model between tokens (never before the first).
func chatBenchStack(b *testing.B, tokenDelay string) (*stack, tenant) {
	s := newStack(b, stackOptions{env: map[string]string{
		"CONCIERGE_LOG_LEVEL": "error", "CONCIERGE_RATE_LIMIT_API_PER_MINUTE": "100000000",
		"CONCIERGE_LOCAL_TOKEN_DELAY": tokenDelay,
	}})
	tn := s.newTenant(domain.PlanStandard)
	var agent agentBody
	s.do("POST", "/api/v2/agents", map[string]any{"slug": "support", "name": "Support"}, tn.auth()).decode(b, &agent)
	seedKnowledge(b, s, tn.ID, agent.ID, 1000)
	return s, tn
}

var benchQuestions = []string{"How long do returns take?", "Are there shipping delays during holidays?", "Where can I download my invoices?", "How long is the warranty valid?", "Do payments work with PayPal?"}

// BenchmarkChatFirstToken measures the service's time to first token: from
// sending the request to reading the first token event, which is the
// service's own overhead (authentication, session, storing the question,
// retrieval over 1,000 chunks, composing, the first flush), since the
// embedded model sends its first token at once.
//
// With 1 stream, the model streams at full speed. With 100, the streams stay
// open: the model paces tokens at 200 ms, so an answer lasts about 2.5 s, as
// a 150-token answer of a hosted model at 60 tokens/s would, and 100 answers
// are always in progress while new ones start.
func BenchmarkChatFirstToken(b *testing.B) {
	for _, tc := range []struct {
		streams int
		delay   string
	}{{1, "0s"}, {100, "200ms"}} {
		s, tn := chatBenchStack(b, tc.delay)
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: tc.streams, MaxConnsPerHost: tc.streams}, Timeout: 30 * time.Second}
		// The streams run continuously through the warm-up and the
		// measurement; their starts are spread over one answer's length, as
		// users arrive, and only answers begun after the warm-up count.
		var (
			mu       sync.Mutex
			lats     []time.Duration
			errs     int
			wg       sync.WaitGroup
			start    = time.Now()
			measure  = start.Add(benchWarmup + 3*time.Second)
			deadline = measure.Add(max(benchDuration(), 10*time.Second))
		)
		for w := range tc.streams {
			wg.Go(func() {
				time.Sleep(time.Duration(w) * 25 * time.Millisecond)
				for i := w; time.Now().Before(deadline); i += tc.streams {
					begun := time.Now()
					ttft, err := firstToken(client, s.base+"/api/v2/chat", tn.Key, benchQuestions[i%len(benchQuestions)])
					if begun.Before(measure) {
						continue
					}
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
		if errs > 0 || len(lats) == 0 {
			b.Fatalf("%d streams: %d errors", tc.streams, errs)
		}
		p50, p99 := lats[len(lats)/2], lats[len(lats)*99/100]
		b.Logf("%3d concurrent streams: first token p50 %.2f ms, p99 %.2f ms over %d answers", tc.streams, ms(p50), ms(p99), len(lats))
		b.ReportMetric(ms(p50), fmt.Sprintf("p50-ms/%d-streams", tc.streams))
		b.ReportMetric(ms(p99), fmt.Sprintf("p99-ms/%d-streams", tc.streams))
		s.shutdown()
	}
}

// insertBaseline is a bare fiber handler doing one PostgreSQL INSERT, the
// floor of any write endpoint. Its table has the columns of messages but no
// foreign key: concurrent inserts under one parent row would pile share
// locks onto it (MultiXacts) and slow the baseline down round after round,
// which no chat request does.
func insertBaseline(b *testing.B, dsn, conversationID, workspaceID string) string {
	b.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if _, err := pool.Exec(context.Background(), `CREATE TABLE bench_inserts (
		id text PRIMARY KEY, workspace_id text NOT NULL, conversation_id text NOT NULL, role text NOT NULL,
		content text NOT NULL, citations jsonb NOT NULL, tokens_in int NOT NULL, tokens_out int NOT NULL, created_at timestamptz NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Post("/baseline", func(c *fiber.Ctx) error {
		var body struct {
			Message string `json:"message"`
		}
		if err := json.Unmarshal(c.Body(), &body); err != nil {
			return err
		}
		id := domain.NewID(domain.PrefixMessage)
		_, err := pool.Exec(c.UserContext(), `INSERT INTO bench_inserts (id, workspace_id, conversation_id, role, content, citations, tokens_in, tokens_out, created_at)
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
	s, tn := chatBenchStack(b, "0s")
	session := s.startSession(tn, "support")
	baseURL := insertBaseline(b, s.env["CONCIERGE_DATABASE_URL"], session, tn.ID)
	questions := benchQuestions

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
