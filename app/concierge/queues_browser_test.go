package main

import (
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// The queue monitor of issue 19 in a real browser (tools/browser/
// queues.test.mjs), against real `concierge serve` and `worker` processes.
// The operator's workspace can only be named before a pod starts, and a
// workspace id exists only once it is created, so the test creates the
// workspace through the first pod, then starts a second pod whose
// CONCIERGE_OPERATOR_WORKSPACE_ID names it. An agent is created there
// (its sources are indexed by the worker: the queues have history). The
// operator workspace's owner signs in, follows "Queues" in the side
// navigation to asynqmon, sees the deployment's queues and a queue's
// tasks, and the page is audited with axe-core at 1024 and 375 px
// (queues-*.png). An admin of the same workspace is shown neither the
// link nor the monitor (the console's not-found page).
func TestQueueMonitorInBrowser(t *testing.T) {
	b := browserTools(t)
	c := newCluster(t, clusterOptions{pods: 1, workers: 1})
	tn := c.newTenant(domain.PlanStandard)

	op := &clusterProc{name: "operator pod", args: []string{"serve"}, env: map[string]string{}}
	for k, v := range c.pods[0].env {
		op.env[k] = v
	}
	addr := freeAddr(t)
	op.env["CONCIERGE_HTTP_ADDR"] = addr
	op.env["CONCIERGE_OPERATOR_WORKSPACE_ID"] = tn.ID
	op.base = "http://" + addr
	c.pods = append(c.pods, op)
	c.start(op)
	c.waitReady(op)
	c.supportAgent(op, tn)

	invite := func(email string, role domain.MemberRole) string {
		t.Helper()
		var inv struct{ Link string }
		admMustJSON(t, c.env, &inv, "admin", "user", "invite", "--workspace", tn.ID, "--email", email, "--role", string(role), "--json")
		if !strings.Contains(inv.Link, "/console/invitations/") {
			t.Fatalf("user invite printed %+v", inv)
		}
		return inv.Link
	}
	b.run(t, "queues.test.mjs", "CONSOLE_SCREENSHOT_DIR", 8*time.Minute,
		"QUEUES_BASE="+op.base,
		"QUEUES_WORKSPACE="+tn.ID,
		"QUEUES_OWNER_LINK="+invite("owner@example.com", domain.MemberOwner),
		"QUEUES_ADMIN_LINK="+invite("admin@example.com", domain.MemberAdmin),
	)
}
