package main

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/account"
	"github.com/conciergehq/concierge/core/domain"
)

// Issue 16's budget for the console: every page answers in p99 < 50 ms of
// server time on a workspace with 100,000 conversations and 10,000
// sources, and weighs under 250 KB (HTML and the CSS and JavaScript it
// references, uncompressed).
const (
	consoleBudgetP99    = 50 * time.Millisecond
	consoleBudgetWeight = 250_000
)

// consoleWorkspace is a seeded workspace and a signed-in owner's session
// cookie for it.
type consoleWorkspace struct {
	name string
	// tag is the digit that starts the seeded ids' numbers, unique per
	// workspace.
	tag    int
	tn     tenant
	cookie string
	// transcript is a chat conversation with a full transcript; playground
	// one started in the playground; laterCursor the URL of a conversation
	// list page 1,000 conversations deep; olderSources that of a knowledge
	// page 5,000 sources deep.
	transcript, playground, laterCursor, olderSources string
	// dateFrom and dateTo bound a week of the seeded activity.
	dateFrom, dateTo string
}

// consoleSize says how much a workspace holds.
type consoleSize struct {
	conversations, sources, members, apiKeys, deliveries int
}

// consolePage is one line of the page table: its name and its path under
// /console/w/{workspaceID}.
type consolePage struct {
	name string
	path func(w consoleWorkspace) string
}

// consolePages are the pages measured, one line each, so a page or a filter
// is one more line.
var consolePages = []consolePage{
	{"agents list", func(consoleWorkspace) string { return "/agents" }},
	{"agent page", func(consoleWorkspace) string { return "/agents/support" }},
	// The knowledge page shows the newest 100 sources and says there are
	// more: it has no later page. Its list fragment, which htmx polls while
	// sources index, is the other read of the 10,000 sources.
	{"knowledge (first page)", func(consoleWorkspace) string { return "/agents/support/knowledge" }},
	{"knowledge 5000 sources deep", func(w consoleWorkspace) string { return w.olderSources }},
	{"knowledge list fragment", func(consoleWorkspace) string { return "/agents/support/knowledge/list" }},
	{"conversations", func(consoleWorkspace) string { return "/conversations" }},
	{"conversations agent+status", func(consoleWorkspace) string { return "/conversations?agent=support&status=RESOLVED" }},
	{"conversations date range", func(w consoleWorkspace) string {
		return "/conversations?from=" + w.dateFrom + "&to=" + w.dateTo
	}},
	{"conversations later page", func(w consoleWorkspace) string { return w.laterCursor }},
	{"conversations with a fallback", func(consoleWorkspace) string { return "/conversations?fallback=yes" }},
	{"conversations rated down", func(consoleWorkspace) string { return "/conversations?rating=down" }},
	// Text search: a word in every conversation's messages, a contact,
	// and a word in none (the index must say so without reading them).
	{"conversations search: common word", func(consoleWorkspace) string { return "/conversations?q=shipping" }},
	{"conversations search: contact", func(consoleWorkspace) string { return "/conversations?q=customer4" }},
	{"conversations search: nowhere", func(consoleWorkspace) string { return "/conversations?q=zebra" }},
	{"transcript", func(w consoleWorkspace) string { return "/conversations/" + w.transcript }},
	{"playground", func(w consoleWorkspace) string { return "/playground?agent=support&session=" + w.playground }},
	{"settings: API keys", func(consoleWorkspace) string { return "/settings/api-keys" }},
	{"integrations: delivery log", func(consoleWorkspace) string { return "/settings/deliveries" }},
	{"members", func(consoleWorkspace) string { return "/members" }},
	// Inbox: the views with their five counts, a search, and a thread.
	{"inbox: needs a person", func(consoleWorkspace) string { return "/inbox" }},
	{"inbox: all open", func(consoleWorkspace) string { return "/inbox?view=open" }},
	{"inbox: resolved, agent", func(consoleWorkspace) string { return "/inbox?view=resolved&agent=support" }},
	{"inbox: resolved search", func(consoleWorkspace) string { return "/inbox?view=resolved&q=customer4" }},
	{"inbox thread", func(w consoleWorkspace) string { return "/inbox/" + w.transcript }},
}

// consolePageRequests is how many requests each page gets per workspace and
// round: 100, or CONCIERGE_BENCH_PAGE_REQUESTS.
func consolePageRequests() int {
	if n, err := strconv.Atoi(os.Getenv("CONCIERGE_BENCH_PAGE_REQUESTS")); err == nil && n > 0 {
		return n
	}
	return 100
}

// consoleRounds is CONCIERGE_BENCH_ROUNDS, but at least 5: the house rule
// for figures is the median of at least five alternating rounds.
func consoleRounds() int { return max(benchRounds(), 5) }

// BenchmarkConsolePages measures issue 16's budget: every console page of a
// big workspace (100,000 conversations of ten messages, 10,000 sources on
// one agent) against the same page of a small one (10 conversations, 10
// sources) in the same process, over real HTTP with a signed-in owner's
// session. Each round asks every page N times of the small workspace, then
// N times of the big one, one request at a time (this is latency, not
// throughput); the figures are the medians over the rounds of each round's
// p50 and p99.
func BenchmarkConsolePages(b *testing.B) {
	s := newStack(b, stackOptions{env: map[string]string{"CONCIERGE_LOG_LEVEL": "error"}})
	seedStart := time.Now()
	small := seedConsoleWorkspace(b, s, "small", 1, consoleSize{conversations: 10, sources: 10, members: 3, apiKeys: 2, deliveries: 10})
	big := seedConsoleWorkspace(b, s, "big", 2, consoleSize{conversations: bigConversations(), sources: 10_000, members: 20, apiKeys: 20, deliveries: 20_000})
	if err := s.sys.db.Gorm.Exec("VACUUM ANALYZE").Error; err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded both workspaces in %s", time.Since(seedStart).Round(time.Second))
	var counts struct{ Conversations, Messages, Sources, Traces, Feedback, Fallbacks int64 }
	s.sys.db.Gorm.Raw(`SELECT (SELECT count(*) FROM conversations WHERE workspace_id = ?) AS conversations,
		(SELECT count(*) FROM messages WHERE workspace_id = ?) AS messages,
		(SELECT count(*) FROM sources WHERE workspace_id = ?) AS sources,
		(SELECT count(*) FROM messages WHERE workspace_id = ? AND trace IS NOT NULL) AS traces,
		(SELECT count(*) FROM messages WHERE workspace_id = ? AND feedback_rating IS NOT NULL) AS feedback,
		(SELECT count(*) FROM messages WHERE workspace_id = ? AND fallback_reason <> '') AS fallbacks`,
		big.tn.ID, big.tn.ID, big.tn.ID, big.tn.ID, big.tn.ID, big.tn.ID).Scan(&counts)
	b.Logf("big workspace: %+v", counts)

	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(w consoleWorkspace, path string) (int, []byte, string, time.Duration, error) {
		req, err := http.NewRequest("GET", s.base+path, nil)
		if err != nil {
			return 0, nil, "", 0, err
		}
		req.Header.Set("Cookie", "concierge_session="+w.cookie)
		// Uncompressed bytes are the page weight; the console does not
		// compress anyway.
		req.Header.Set("Accept-Encoding", "identity")
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, "", 0, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, body, resp.Header.Get("Server-Timing"), time.Since(start), err
	}
	pagePath := func(w consoleWorkspace, p consolePage) string { return "/console/w/" + w.tn.ID + p.path(w) }

	// Page weight, and a check that every page is the page and not the
	// sign-in form or an error.
	type weight struct{ html, assets int }
	weights := map[string][2]weight{}
	timingHeaders := map[string]string{}
	assetRef := regexp.MustCompile(`(?:href|src)="(/console/assets/[^"]+)"`)
	assetSize := map[string]int{}
	for _, p := range consolePages {
		var pair [2]weight
		for i, w := range []consoleWorkspace{small, big} {
			status, body, timing, _, err := get(w, pagePath(w, p))
			// Pages have a <main>; the list fragment is the sources' <div>.
			if err != nil || status != 200 || !(strings.Contains(string(body), "<main") || strings.Contains(string(body), `<div id="sources"`)) {
				b.Fatalf("%s of the %s workspace: %d %v\n%.2000s", p.name, w.name, status, err, body)
			}
			if timing != "" {
				timingHeaders[p.name] = timing
			}
			pair[i].html = len(body)
			for _, m := range assetRef.FindAllStringSubmatch(string(body), -1) {
				link := html.UnescapeString(m[1])
				if _, ok := assetSize[link]; !ok {
					status, a, _, _, err := get(w, link)
					if err != nil || status != 200 {
						b.Fatalf("asset %s: %d %v", link, status, err)
					}
					assetSize[link] = len(a)
				}
				pair[i].assets += assetSize[link]
			}
		}
		weights[p.name] = pair
	}

	// Warm up: statement caches, the agent cache, the template buffers.
	for _, w := range []consoleWorkspace{small, big} {
		for _, p := range consolePages {
			for range 10 {
				_, _, _, _, _ = get(w, pagePath(w, p))
			}
		}
	}

	b.ResetTimer()
	n := consolePageRequests()
	type figures struct{ p50, p99 []time.Duration }
	results := map[string]*[2]figures{}
	for _, p := range consolePages {
		results[p.name] = &[2]figures{}
	}
	for round := range consoleRounds() {
		for _, p := range consolePages {
			for i, w := range []consoleWorkspace{small, big} {
				lats := make([]time.Duration, 0, n)
				for range n {
					status, _, _, d, err := get(w, pagePath(w, p))
					if err != nil || status != 200 {
						b.Fatalf("round %d, %s of the %s workspace: %d %v", round+1, p.name, w.name, status, err)
					}
					lats = append(lats, d)
				}
				slices.Sort(lats)
				r := results[p.name]
				r[i].p50 = append(r[i].p50, lats[len(lats)/2])
				r[i].p99 = append(r[i].p99, lats[len(lats)*99/100])
			}
		}
	}
	b.StopTimer()

	median := func(ds []time.Duration) time.Duration {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n%d rounds of %d requests per page and workspace; medians over the rounds\n", consoleRounds(), n)
	fmt.Fprintf(&table, "%-28s %16s %16s %7s %11s %11s  %s\n", "page", "small p50/p99", "big p50/p99", "ratio", "small KB", "big KB", "budget")
	worst := time.Duration(0)
	heaviest := 0
	for _, p := range consolePages {
		r, wt := results[p.name], weights[p.name]
		smallP99, bigP99 := median(r[0].p99), median(r[1].p99)
		bigWeight := wt[1].html + wt[1].assets
		verdict := "ok"
		if bigP99 >= consoleBudgetP99 || bigWeight >= consoleBudgetWeight {
			verdict = "MISSED"
		}
		fmt.Fprintf(&table, "%-28s %7.2f/%6.2f ms %7.2f/%6.2f ms %6.2fx %5.1f+%5.1f %5.1f+%5.1f  %s  p99 per-round big: %s\n", p.name,
			ms(median(r[0].p50)), ms(smallP99), ms(median(r[1].p50)), ms(bigP99), float64(bigP99)/float64(smallP99),
			float64(wt[0].html)/1000, float64(wt[0].assets)/1000, float64(wt[1].html)/1000, float64(wt[1].assets)/1000, verdict, msList(r[1].p99))
		worst = max(worst, bigP99)
		heaviest = max(heaviest, bigWeight)
		// One metric per page: the big workspace's p99 and the ratio to the
		// small one's.
		key := strings.NewReplacer(" ", "-", ":", "", "+", "-", "(", "", ")", "").Replace(p.name)
		b.ReportMetric(ms(bigP99), "p99-ms/"+key)
		b.ReportMetric(float64(bigP99)/float64(smallP99), "p99-ratio/"+key)
	}
	if len(timingHeaders) == 0 {
		fmt.Fprintf(&table, "no page sets Server-Timing: times are the client's, on loopback\n")
	}
	for name, h := range timingHeaders {
		fmt.Fprintf(&table, "Server-Timing of %s: %s\n", name, h)
	}
	// Straight to the output: the testing package keeps only the first ten
	// lines a benchmark logs, and the table is longer.
	fmt.Print(table.String())
	b.ReportMetric(ms(worst), "worst-p99-ms")
	b.ReportMetric(float64(heaviest)/1000, "heaviest-KB")
	b.Logf("worst p99 %.2f ms (budget < %.0f ms), heaviest page %.1f KB (budget < %d KB)", ms(worst), ms(consoleBudgetP99), float64(heaviest)/1000, consoleBudgetWeight/1000)
}

func msList(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%.2f", ms(d))
	}
	return strings.Join(parts, " / ")
}

// seedConsoleWorkspace builds a workspace of the given size. What the
// service makes on its own (agents, indexed sources, answers with their
// traces and fallbacks, members, API keys) is made through its use cases
// and API; the bulk (conversations, their messages, sources and
// deliveries) is copied from those in SQL, which seeds a million messages
// in a minute instead of hours.
func seedConsoleWorkspace(b *testing.B, s *stack, name string, tag int, size consoleSize) consoleWorkspace {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	w := consoleWorkspace{name: name, tag: tag, tn: s.newTenant(domain.PlanStandard)}
	tn := w.tn
	db := s.sys.db.Gorm.WithContext(ctx)
	// The bulk statements go straight to the pgx pool: each ? that stands
	// for a number is written into the statement (PostgreSQL cannot always
	// infer a parameter's type in arithmetic), the others are numbered as
	// its $n (none appears in a literal).
	exec := func(query string, args ...any) {
		b.Helper()
		var numbered strings.Builder
		var params []any
		for i, part := range strings.Split(query, "?") {
			if i > 0 {
				if v, ok := args[i-1].(int); ok {
					numbered.WriteString(strconv.Itoa(v))
				} else {
					params = append(params, args[i-1])
					numbered.WriteString("$" + strconv.Itoa(len(params)))
				}
			}
			numbered.WriteString(part)
		}
		// The rows are consistent by construction, so the foreign keys'
		// per-row checks are skipped (session_replication_role = replica,
		// for this transaction only): checking a million messages' keys one
		// by one took longer than inserting them.
		tx, err := s.sys.db.Pool.Begin(ctx)
		if err == nil {
			if _, err = tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err == nil {
				if _, err = tx.Exec(ctx, numbered.String(), params...); err == nil {
					err = tx.Commit(ctx)
				}
			}
			_ = tx.Rollback(ctx)
		}
		if err != nil {
			b.Fatalf("seeding the %s workspace: %v\n%s", name, err, query)
		}
	}

	// Five agents; "support" has the knowledge and most conversations.
	// The worker indexes its three sources and is then stopped, so its
	// sweeps do not take the bulk-inserted rows for work to do.
	s.ensureWorker()
	supportAgent(s, tn)
	s.stopWorkerAndWait()
	for _, slug := range []string{"billing", "sales", "onboarding", "internal"} {
		s.mustStatus(s.do("POST", "/api/v2/agents", map[string]any{"slug": slug, "name": "Acme " + slug}, tn.auth()), 201)
	}

	// A template conversation of ten messages from the real chat engine:
	// five questions, some answered with citations, some falling back (one
	// is a blocked topic), the replies with their retrieval traces.
	var session string
	for _, q := range []string{"How long does shipping take?", "How do I reset my password?", "Can I return an item after two weeks?",
		"What is the airspeed velocity of an unladen swallow?", "What do you think about politics and the election?"} {
		body := map[string]any{"agent": "support", "message": q}
		if session != "" {
			body["sessionId"] = session
		}
		r, a := s.chat(tn, body)
		s.mustStatus(r, 200)
		session = a.SessionID
	}

	// Sources beyond the three indexed ones: READY text sources with their
	// chunk counts, as a knowledge base at rest.
	if extra := size.sources - 3; extra > 0 {
		exec(`INSERT INTO sources (id, workspace_id, agent_id, type, name, content, status, chunk_count, token_count, created_at, updated_at,
			content_hash, embedder, indexed_at, generation)
			SELECT 'src_' || lpad((?::int)::text || i::text, 26, '0'), a.workspace_id, a.id, 'text', 'Help article ' || i,
			       'Article ' || i || ' explains one more thing customers ask about.', 'READY', 1 + i % 7, 40 + i % 300,
			       now() - (?::int - i) * interval '1 minute', now() - (?::int - i) * interval '1 minute',
			       md5(i::text), (SELECT embedder FROM sources WHERE agent_id = a.id LIMIT 1), now() - (?::int - i) * interval '1 minute', 1
			FROM agents a, generate_series(1, ?::int) AS i
			WHERE a.workspace_id = ? AND a.slug = 'support'`, tag, extra, extra, extra, extra, tn.ID)
	}

	// Conversations over the last 100 days: most on "support", statuses
	// mixed, one in fifty started in the playground. Ids are valid ids
	// (26 characters of the id alphabet) unique to this workspace. The
	// seeding runs without triggers (replica), so it writes what the move
	// would: a waiting conversation's handoff time, a minute before its
	// last activity.
	n := size.conversations
	exec(`INSERT INTO conversations (id, workspace_id, agent_id, agent_slug, channel, status, last_message, message_count, last_activity_at, created_at,
			contact_name, contact_email, handoff_requested_at)
		SELECT 'ses_' || lpad((?::int)::text || i::text, 26, '0'), a.workspace_id, a.id, a.slug,
		       CASE WHEN i % 50 = 0 THEN 'PLAYGROUND' ELSE 'CHAT' END,
		       (ARRAY['RESOLVED','RESOLVED','AI','AI','HUMAN','HANDOFF_REQUESTED'])[1 + i % 6],
		       'What do you think about politics and the election' || chr(63), 10,
		       now() - (?::int - i) * (interval '100 days' / ?::int), now() - (?::int - i) * (interval '100 days' / ?::int) - interval '5 minutes',
		       CASE WHEN i % 6 >= 4 THEN 'Customer ' || i ELSE '' END, CASE WHEN i % 6 >= 4 THEN 'customer' || i || '@example.com' ELSE '' END,
		       CASE WHEN i % 6 = 5 THEN now() - (?::int - i) * (interval '100 days' / ?::int) - interval '1 minute' END
		FROM generate_series(1, ?::int) AS i
		JOIN agents a ON a.workspace_id = ? AND a.slug = (ARRAY['support','support','support','support','support','support','billing','sales','onboarding','internal'])[1 + i % 10]`,
		tag, n, n, n, n, n, n, n, tn.ID)

	exec("ANALYZE conversations")

	// The messages' trigram index (the list's text search) is built after
	// the load, as CREATE INDEX over an existing table would: a million
	// inserts into a GIN index cost far more than building it once.
	var trigramIndex string
	if err := db.Raw(`SELECT indexdef FROM pg_indexes WHERE indexname = 'messages_content_trgm_idx'`).Row().Scan(&trigramIndex); err != nil {
		b.Fatal(err)
	}
	exec("DROP INDEX messages_content_trgm_idx")

	// Every conversation gets the template's ten messages. Half the
	// conversations keep their replies' traces, so transcripts with and
	// without them are both in the table; one in ten has thumbs-down
	// ratings on its fallbacks and one in five a thumbs-up on its first
	// answer.
	exec(`INSERT INTO messages (id, workspace_id, conversation_id, role, content, citations, tokens_in, tokens_out, created_at,
			trace, token_ends, status, author_name, feedback_rating, feedback_comment, feedback_at, fallback_reason, offer_handoff)
		SELECT 'msg_' || lpad((?::int)::text || n::text || 'x' || k::text, 26, '0'), workspace_id, id, role, content, citations,
		       tokens_in, tokens_out, created_at + k * interval '20 seconds',
		       CASE WHEN n % 2 = 0 THEN trace END, token_ends, status, author_name,
		       rating, CASE WHEN rating = 'down' THEN 'It did not know' ELSE '' END, CASE WHEN rating IS NOT NULL THEN last_activity_at END,
		       fallback_reason, offer_handoff
		FROM (SELECT c.id, c.workspace_id, c.created_at, c.last_activity_at, c.n, t.*,
		             CASE WHEN c.n % 10 = 0 AND t.fallback_reason <> '' THEN 'down'
		                  WHEN c.n % 5 = 0 AND t.k = 2 AND t.role = 'ASSISTANT' THEN 'up' END AS rating
		      FROM (SELECT id, workspace_id, created_at, last_activity_at, substr(ltrim(substr(id, 5), '0'), 2)::bigint AS n
		            FROM conversations WHERE workspace_id = ? AND id <> ?) AS c
		      CROSS JOIN (SELECT row_number() OVER (ORDER BY seq) AS k, role, content, citations, tokens_in, tokens_out, trace, token_ends,
		                         status, author_name, fallback_reason, offer_handoff
		                  FROM messages WHERE conversation_id = ?) AS t) AS m`,
		tag, tn.ID, session, session)
	exec(trigramIndex)
	// The list's fallback and rating filters read counters the store keeps
	// as it appends and rates; rows inserted by hand get them here.
	exec(`UPDATE conversations AS c SET fallback_count = n.fallbacks, thumbs_up = n.ups, thumbs_down = n.downs
		FROM (SELECT conversation_id, count(*) FILTER (WHERE fallback_reason <> '') AS fallbacks,
		             count(*) FILTER (WHERE feedback_rating = 'up') AS ups, count(*) FILTER (WHERE feedback_rating = 'down') AS downs
		      FROM messages WHERE workspace_id = ? AND role = 'ASSISTANT' GROUP BY conversation_id) AS n
		WHERE c.workspace_id = ? AND c.id = n.conversation_id`, tn.ID, tn.ID)
	exec("ANALYZE conversations")
	exec("ANALYZE messages")
	var messages int64
	db.Raw(`SELECT count(*) FROM messages WHERE workspace_id = ?`, tn.ID).Scan(&messages)

	// Deliveries to the events endpoint: most delivered, some failed
	// after retries, a few pending; each with its attempts.
	exec(`INSERT INTO outbox (id, workspace_id, target, event_type, conversation_id, payload, status, attempts, next_attempt_at, last_error, created_at, delivered_at)
		SELECT 'dlv_' || lpad((?::int)::text || i::text, 26, '0'), ?, (ARRAY['events','helpdesk'])[1 + i % 2],
		       (ARRAY['conversation.created','message.created','message.created','handoff.requested','handoff.resolved'])[1 + i % 5],
		       'ses_' || lpad((?::int)::text || (1 + i % ?::int)::text, 26, '0'), '{"type":"message.created"}',
		       CASE WHEN i % 20 = 0 THEN 'FAILED' WHEN i % 97 = 0 THEN 'PENDING' ELSE 'DELIVERED' END,
		       CASE WHEN i % 20 = 0 THEN 8 ELSE 1 END, now(), CASE WHEN i % 20 = 0 THEN 'HTTP 502' ELSE '' END,
		       now() - (?::int - i) * interval '1 minute', CASE WHEN i % 20 <> 0 AND i % 97 <> 0 THEN now() - (?::int - i) * interval '1 minute' END
		FROM generate_series(1, ?::int) AS i`, tag, tn.ID, tag, n, size.deliveries, size.deliveries, size.deliveries)
	exec(`INSERT INTO delivery_attempts (outbox_id, attempt, at, status_code, error, duration_ms)
		SELECT o.id, k, o.created_at + k * interval '1 second', CASE WHEN o.status = 'FAILED' THEN 502 ELSE 200 END,
		       CASE WHEN o.status = 'FAILED' THEN 'HTTP 502' ELSE '' END, 40 + k
		FROM outbox o, generate_series(1, 8) AS k
		WHERE o.workspace_id = ? AND k <= o.attempts`, tn.ID)

	// The owner signs in through the account service, as the console's
	// sign-in form does; the other members accept their invitations.
	accept := func(email string, role domain.MemberRole) account.SignedIn {
		inv, err := s.sys.accounts.InviteByOperator(ctx, tn.ID, account.InviteRequest{Email: email, Role: role})
		if err != nil {
			b.Fatal(err)
		}
		token := inv.Link[strings.LastIndex(inv.Link, "/")+1:]
		signed, err := s.sys.accounts.AcceptInvitation(ctx, account.AcceptRequest{Token: token, Name: "Member " + email, Password: "a long enough password", IP: "127.0.0.1"})
		if err != nil {
			b.Fatal(err)
		}
		return signed
	}
	w.cookie = accept("owner-"+name+"@example.com", domain.MemberOwner).Token
	for i := 1; i < size.members; i++ {
		role := domain.MemberAgent
		if i%4 == 0 {
			role = domain.MemberAdmin
		}
		accept(fmt.Sprintf("member%d-%s@example.com", i, name), role)
	}
	for i := range 3 {
		if _, err := s.sys.accounts.InviteByOperator(ctx, tn.ID, account.InviteRequest{Email: fmt.Sprintf("pending%d-%s@example.com", i, name), Role: domain.MemberAgent}); err != nil {
			b.Fatal(err)
		}
	}
	for i := 1; i < size.apiKeys; i++ { // newTenant made the first
		if _, _, err := s.sys.workspaces.CreateAPIKey(ctx, tn.ID, fmt.Sprintf("Integration %d", i)); err != nil {
			b.Fatal(err)
		}
	}

	// The pages' parameters: the transcript of a chat conversation and a
	// playground one (both with their traces), a week in the middle of the
	// activity, and the list page after 40 pages of 25.
	transcript := n - 10
	if transcript < 1 {
		transcript = n
	}
	w.transcript = seededID("ses_", tag, transcript)
	w.playground = seededID("ses_", tag, n/50*50)
	if n < 50 {
		w.playground = session
	}
	mid := time.Now().UTC().AddDate(0, 0, -50)
	w.dateFrom, w.dateTo = mid.AddDate(0, 0, -6).Format("2006-01-02"), mid.Format("2006-01-02")
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(s.base)
	jar.SetCookies(u, []*http.Cookie{{Name: "concierge_session", Value: w.cookie}})
	client := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	// follow walks a list from its first page through its own next-page
	// links, at most pages times, and returns the URL it got to.
	follow := func(first string, next *regexp.Regexp, pages int) string {
		at := first
		for range pages {
			resp, err := client.Get(s.base + "/console/w/" + tn.ID + at)
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			m := next.FindStringSubmatch(string(body))
			if m == nil {
				break
			}
			at = strings.TrimPrefix(html.UnescapeString(m[1]), "/console/w/"+tn.ID)
		}
		return at
	}
	w.laterCursor = follow("/conversations", regexp.MustCompile(`href="(/console/w/[^"]+/conversations\?[^"]*cursor=[^"]+)"`), min(40, n/25))
	w.olderSources = follow("/agents/support/knowledge", regexp.MustCompile(`href="(/console/w/[^"]+/knowledge\?cursor=[^"]+)" rel="next"`), min(50, size.sources/100))
	b.Logf("%s workspace: %d conversations, %d messages, %d sources, %d members, %d API keys, %d deliveries in %s",
		name, n, messages, size.sources, size.members, size.apiKeys, size.deliveries, time.Since(start).Round(time.Millisecond))
	return w
}

// seededID is the id the seeding SQL gives the i-th row of the workspace
// tagged tag: 'ses_' || lpad(tag || i, 26, '0').
func seededID(prefix string, tag, i int) string {
	digits := fmt.Sprintf("%d%d", tag, i)
	return prefix + strings.Repeat("0", 26-len(digits)) + digits
}

// bigConversations is how many conversations the big workspace has:
// 100,000, or CONCIERGE_BENCH_CONSOLE_CONVERSATIONS for a quick check of
// the benchmark itself.
func bigConversations() int {
	if n, err := strconv.Atoi(os.Getenv("CONCIERGE_BENCH_CONSOLE_CONVERSATIONS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}
