package redistest_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/conciergehq/concierge/adapters/redis/redistest"
)

func open(t *testing.T, url string) *goredis.Client {
	t.Helper()
	opts, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatalf("ParseURL(%q): %v", url, err)
	}
	client := goredis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func dbOf(t *testing.T, url string) int {
	t.Helper()
	i := strings.LastIndex(url, "/")
	db, err := strconv.Atoi(url[i+1:])
	if err != nil {
		t.Fatalf("URL %q does not end in a database number", url)
	}
	return db
}

func TestURLGivesAnEmptyDatabaseOfItsOwn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, b := redistest.URL(t), redistest.URL(t)
	if !strings.HasPrefix(a, "redis://") {
		t.Errorf("URL = %q, want a redis:// URL", a)
	}
	dbA, dbB := dbOf(t, a), dbOf(t, b)
	if dbA == dbB || dbA < 1 || dbA > 15 || dbB < 1 || dbB > 15 {
		t.Fatalf("got databases %d and %d, want two different ones in 1..15", dbA, dbB)
	}
	ca, cb := open(t, a), open(t, b)
	for name, c := range map[string]*goredis.Client{"a": ca, "b": cb} {
		if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
			t.Errorf("database %s holds %d keys (err %v), want an empty one", name, n, err)
		}
	}
	if err := ca.Set(ctx, "k", "from a", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := cb.Exists(ctx, "k").Result(); n != 0 {
		t.Error("a key written in one database is visible in the other")
	}
}

func baseURL() string {
	if u := os.Getenv(redistest.EnvURL); u != "" {
		return u
	}
	return redistest.DefaultURL
}

func TestCleanupFlushesAndReleases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	claims := open(t, baseURL())
	var url, token string
	t.Run("owner", func(t *testing.T) {
		url = redistest.URL(t)
		var err error
		token, err = claims.Get(ctx, "concierge:test-claim:"+strconv.Itoa(dbOf(t, url))).Result()
		if err != nil || token == "" {
			t.Fatalf("no claim held for %s: %v", url, err)
		}
		if ttl, _ := claims.TTL(ctx, "concierge:test-claim:"+strconv.Itoa(dbOf(t, url))).Result(); ttl <= 0 {
			t.Errorf("claim has no expiry (TTL %v), so a crashed test would hold it forever", ttl)
		}
		if err := open(t, url).Set(ctx, "leftover", "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
	})
	// Another test may claim the database right after release, so compare tokens, not existence.
	got, err := claims.Get(ctx, "concierge:test-claim:"+strconv.Itoa(dbOf(t, url))).Result()
	if err != nil && err != goredis.Nil {
		t.Fatal(err)
	}
	if got == token {
		t.Error("the claim was not released at cleanup")
	}
	if n, err := open(t, url).Exists(ctx, "leftover").Result(); err != nil || n != 0 {
		t.Errorf("leftover key survived cleanup (exists=%d, err=%v)", n, err)
	}
}

// Parallel claimers each find their database empty and keep it to themselves.
func TestConcurrentClaimsAreExclusive(t *testing.T) {
	t.Parallel()
	for i := range 6 {
		name := "claimer" + strconv.Itoa(i)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			c := open(t, redistest.URL(t))
			if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
				t.Fatalf("claimed database holds %d keys (err %v)", n, err)
			}
			if ok, err := c.SetNX(ctx, "owner", name, 0).Result(); err != nil || !ok {
				t.Fatalf("another claimer already owns this database (err %v)", err)
			}
			time.Sleep(50 * time.Millisecond) // overlap with the other claimers
			if owner, err := c.Get(ctx, "owner").Result(); err != nil || owner != name {
				t.Errorf("owner = %q (err %v), want %q", owner, err, name)
			}
		})
	}
}
