package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

// TestInterruptedAnswerEnds: an answer streaming when its API pod dies used
// to never end: the question was stored, a stream following it replayed
// the tokens that reached Redis and then only pinged, forever, and poll
// showed a question without a reply. Now the worker's sweeper closes it
// once it is well past the engine's time limit: the reply is stored with
// what the visitor saw and fallbackReason INTERRUPTED, and every stream
// following it (live, or resumed later) gets its terminal error event.
func TestInterruptedAnswerEnds(t *testing.T) {
	c := newCluster(t, clusterOptions{pods: 2, workers: 1, env: map[string]string{
		// Slow tokens, so the pod can be killed mid-answer; a short time
		// limit, so the answer counts as interrupted 2 x 3 s after it began.
		"CONCIERGE_LOCAL_TOKEN_DELAY":    "200ms",
		"CONCIERGE_CHAT_TIMEOUT":         "3s",
		"CONCIERGE_INBOUND_SWEEP_PERIOD": "1s",
	}})
	podA, podB := c.pods[0], c.pods[1]
	tn := c.newTenant(domain.PlanStandard)
	c.supportAgent(podA, tn)
	session := c.startSession(podA, tn)

	follower := openLive(t, "GET", podA.base+"/api/chat/"+session+"/events", nil, nil)
	asker := openLive(t, "POST", podB.base+"/api/chat/"+session+"/message",
		map[string]any{"message": "How long does standard shipping take and what does it cost?", "stream": true}, nil)
	question := asker.next()
	if question.Data["type"] != "message" {
		t.Fatalf("first event %v, want the stored question", question.Data)
	}
	first := asker.nextN(2)
	replyID, _, _ := strings.Cut(first[0].ID, ":")
	// Tokens reach the asker at once and the bus a moment later (the bus
	// never delays an answer), so pod B dies only once the follower has
	// seen one: a kill right after the asker's tokens could otherwise come
	// before any was published, which under load it once did.
	evs := follower.until(func(ev sseEvent) bool { return ev.Data["type"] == "token" })
	c.kill(podB)

	// The follower on the other pod saw the question and the tokens that
	// were published, then waits; the sweeper ends the answer.
	var said strings.Builder
	evs = append(evs, follower.until(func(ev sseEvent) bool { return ev.Data["type"] == "error" })...)
	for _, ev := range evs {
		if ev.Data["type"] == "token" {
			said.WriteString(ev.Data["content"].(string))
		}
	}
	end := evs[len(evs)-1]
	if end.ID != replyID+":"+strconv.Itoa(domain.InterruptedSeq) || end.Data["code"] != "INTERNAL" || end.Data["message"] != domain.InterruptedMessage {
		t.Fatalf("the answer ended with %s %v", end.ID, end.Data)
	}
	if said.Len() == 0 || !strings.HasPrefix(said.String(), first[0].Data["content"].(string)) {
		t.Fatalf("the follower saw %q before the end", said.String())
	}

	// Poll shows what happened: the question and the reply as far as it
	// went, marked interrupted.
	p := c.do(podA, "GET", "/api/chat/"+session+"/poll", nil, nil)
	c.must(p, 200)
	var polled pollBody
	p.decode(t, &polled)
	if len(polled.Messages) != 2 || polled.Messages[1].ID != replyID || polled.Messages[1].Role != "ASSISTANT" ||
		polled.Messages[1].FallbackReason != "INTERRUPTED" || polled.Messages[1].Content != said.String() {
		t.Fatalf("poll %+v, want the question and the interrupted reply holding %q", polled.Messages, said.String())
	}

	// A stream resumed later from the middle of the answer gets the rest
	// of what was said and the same end.
	resumed := openLive(t, "GET", podA.base+"/api/chat/"+session+"/events", nil, header{"Last-Event-ID": first[0].ID})
	evs = resumed.until(func(ev sseEvent) bool { return ev.Data["type"] == "error" })
	if got := evs[len(evs)-1].ID; got != end.ID {
		t.Errorf("the resumed stream ended with %s, want %s", got, end.ID)
	}

	// The conversation goes on.
	next := c.do(podA, "POST", "/api/chat/"+session+"/message", map[string]any{"message": "Can I return an item?"}, nil)
	c.must(next, 200)
}
