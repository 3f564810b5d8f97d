package main

import (
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// The improve-an-answer loop of issue 18 in a real browser: `concierge
// serve` and `concierge worker` as real processes, a visitor's question
// the agent cannot answer (a fallback, through the API), grouped by the
// worker into a topic; then tools/browser/unanswered.test.mjs: an owner
// opens Unanswered, the agent's topics and the topic, writes the answer,
// sees the topic addressed, and asks the question in the playground until
// the agent answers it from the new Q&A source. The pages are audited
// with axe-core and photographed at 1024 and 375 px (unanswered-*.png,
// into CONSOLE_SCREENSHOT_DIR when set). Afterwards the topic is read
// back through the API: addressed, by the source the browser wrote.
func TestUnansweredInBrowser(t *testing.T) {
	b := browserTools(t)
	c := newCluster(t, clusterOptions{pods: 1, workers: 1})
	pod := c.pods[0]
	tn := c.newTenant(domain.PlanStandard)
	c.supportAgent(pod, tn)
	const question = "Do you offer gift wrapping?"
	r := c.do(pod, "POST", "/api/v2/chat", map[string]any{"agent": "support", "message": question}, tn.auth())
	c.must(r, 200)
	if r.JSON(t)["isFallback"] != true {
		t.Fatalf("the question was answered before the team wrote an answer: %s", r.Body)
	}
	var topicID string
	for deadline := time.Now().Add(60 * time.Second); topicID == ""; {
		r := c.do(pod, "GET", "/api/v2/agents/support/unanswered-topics", nil, tn.auth())
		c.must(r, 200)
		if data := r.JSON(t)["data"].([]any); len(data) == 1 {
			topicID = data[0].(map[string]any)["id"].(string)
		} else if time.Now().After(deadline) {
			t.Fatalf("no topic after 60 s: %s", r.Body)
		} else {
			time.Sleep(200 * time.Millisecond)
		}
	}
	type invitation struct{ Email, Role, Link string }
	var owner invitation
	admMustJSON(t, c.env, &owner, "admin", "user", "invite", "--workspace", tn.ID, "--email", "olga@example.com", "--role", "owner", "--json")
	if !strings.Contains(owner.Link, "/console/invitations/") {
		t.Fatalf("user invite printed %+v", owner)
	}

	b.run(t, "unanswered.test.mjs", "CONSOLE_SCREENSHOT_DIR", 8*time.Minute,
		"UNANSWERED_BASE="+pod.base,
		"UNANSWERED_WORKSPACE="+tn.ID,
		"UNANSWERED_SLUG=support",
		"UNANSWERED_QUESTION="+question,
		"UNANSWERED_OWNER_LINK="+owner.Link,
		"UNANSWERED_OWNER_EMAIL="+owner.Email,
		"UNANSWERED_ANSWER=Yes: gift wrapping costs 3 euros per order; choose it at checkout.",
	)

	got := c.do(pod, "GET", "/api/v2/agents/support/unanswered-topics/"+topicID, nil, tn.auth())
	c.must(got, 200)
	topic := got.JSON(t)
	src, _ := topic["sourceId"].(string)
	if topic["status"] != "ADDRESSED" || src == "" {
		t.Fatalf("topic after the browser = %v", topic)
	}
	s := c.do(pod, "GET", "/api/v2/agents/support/sources/"+src, nil, tn.auth())
	c.must(s, 200)
	if body := s.JSON(t); body["type"] != "qa" || body["question"] != question {
		t.Errorf("source = %v", body)
	}
}
