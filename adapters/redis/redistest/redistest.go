// Package redistest gives tests exclusive use of one logical Redis database on
// a real server, so test packages that `go test` runs in parallel processes
// never see each other's keys.
//
// Databases 1 to 15 are handed out through claim keys in the base database
// (database 0 by default): a claim is SET NX with a ten-minute expiry, so a
// crashed test process frees its database by itself.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// EnvURL names the environment variable holding the base server's URL.
const EnvURL = "CONCIERGE_TEST_REDIS_URL"

// DefaultURL is used when EnvURL is unset.
const DefaultURL = "redis://127.0.0.1:6379/0"

const (
	claimPrefix = "concierge:test-claim:"
	// claimTTL frees the database of a test process that died without cleanup.
	claimTTL = 10 * time.Minute
	// refreshEvery keeps a claim alive for tests that run longer than claimTTL.
	refreshEvery = time.Minute
	// waitFor bounds how long a test waits for a free database.
	waitFor = 2 * time.Minute
	// firstDB and lastDB are the databases handed out; Redis has 16 by default.
	firstDB = 1
	lastDB  = 15
)

// releaseLua deletes a claim only if it still holds our token: after an
// expiry another process may own the database, and its claim must survive.
const releaseLua = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0`

// refreshLua extends a claim only if it still holds our token.
const refreshLua = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`

// URL claims a free database for the rest of t, empties it, and returns the
// server's URL with that database (for example redis://127.0.0.1:6379/7).
// At cleanup the database is emptied again and the claim released. It waits
// while all databases are taken and fails t if Redis cannot be reached.
func URL(t testing.TB) string {
	t.Helper()
	raw := os.Getenv(EnvURL)
	if raw == "" {
		raw = DefaultURL
	}
	base, err := url.Parse(raw)
	if err != nil {
		// Not the error itself: it would print the URL and any password in it.
		t.Fatalf("redistest: %s is not a valid URL", EnvURL)
	}
	opts, err := goredis.ParseURL(raw)
	if err != nil {
		t.Fatalf("redistest: %s: %v", base.Redacted(), err)
	}
	claimDB := opts.DB

	ctx := context.Background()
	claims := goredis.NewClient(opts)
	defer claims.Close()
	if err := claims.Ping(ctx).Err(); err != nil {
		t.Fatalf("redistest: Redis at %s is not reachable (%v); start it with: redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save \"\" --appendonly no", base.Redacted(), err)
	}

	releaseScript := goredis.NewScript(releaseLua)
	refreshScript := goredis.NewScript(refreshLua)
	token := newToken()
	db, err := claim(ctx, claims, claimDB, token)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	key := claimPrefix + strconv.Itoa(db)

	dbOpts := *opts
	dbOpts.DB = db
	dbClient := goredis.NewClient(&dbOpts)
	if err := dbClient.FlushDB(ctx).Err(); err != nil {
		_ = dbClient.Close()
		_ = releaseScript.Run(ctx, claims, []string{key}, token).Err()
		t.Fatalf("redistest: flush database %d: %v", db, err)
	}

	// The claims client above is closed on return; cleanup and refresh need
	// their own, which lives as long as the test.
	owner := goredis.NewClient(opts)
	stopRefresh := make(chan struct{})
	refreshDone := make(chan struct{})
	go func() {
		defer close(refreshDone)
		ticker := time.NewTicker(refreshEvery)
		defer ticker.Stop()
		for {
			select {
			case <-stopRefresh:
				return
			case <-ticker.C:
				_ = refreshScript.Run(ctx, owner, []string{key}, token, claimTTL.Milliseconds()).Err()
			}
		}
	}()

	t.Cleanup(func() {
		close(stopRefresh)
		<-refreshDone
		// Flush before releasing, so the next owner never sees our keys even
		// if it skipped its own flush.
		if err := dbClient.FlushDB(ctx).Err(); err != nil {
			t.Errorf("redistest: flush database %d at cleanup: %v", db, err)
		}
		_ = dbClient.Close()
		if err := releaseScript.Run(ctx, owner, []string{key}, token).Err(); err != nil {
			t.Errorf("redistest: release database %d: %v", db, err)
		}
		_ = owner.Close()
	})

	u := *base
	u.Path = "/" + strconv.Itoa(db)
	u.RawPath = ""
	return u.String()
}

// claim takes the first free database, starting at a random one so that
// concurrent claimers rarely race for the same key, and waits while all are taken.
func claim(ctx context.Context, client *goredis.Client, claimDB int, token string) (int, error) {
	deadline := time.Now().Add(waitFor)
	for {
		start := mathrand.IntN(lastDB-firstDB+1) + firstDB
		for i := range lastDB - firstDB + 1 {
			db := firstDB + (start-firstDB+i)%(lastDB-firstDB+1)
			if db == claimDB {
				continue // the claims live there; flushing it would free every claim
			}
			ok, err := client.SetNX(ctx, claimPrefix+strconv.Itoa(db), token, claimTTL).Result()
			if err != nil {
				return 0, fmt.Errorf("claim database %d: %w", db, err)
			}
			if ok {
				return db, nil
			}
		}
		if time.Now().After(deadline) {
			return 0, errors.New("no free Redis database after " + waitFor.String() + "; stale claims expire after " + claimTTL.String())
		}
		time.Sleep(50*time.Millisecond + mathrand.N(100*time.Millisecond))
	}
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand panics itself on Go 1.24+)
	return strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b)
}
