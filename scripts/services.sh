#!/usr/bin/env bash
# Makes sure PostgreSQL and Redis are up on this machine, starting them when
# they are down. Idempotent; used by `make run`, `make test` and .ci/run.
set -euo pipefail

pg_host=127.0.0.1
pg_port=5432

pg_up() { pg_isready -q -h "$pg_host" -p "$pg_port" 2>/dev/null; }
redis_up() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = "PONG" ]; }

wait_for() { # name, check function
  for _ in $(seq 1 60); do
    if "$2"; then return 0; fi
    sleep 0.5
  done
  echo "services: $1 did not come up within 30 s" >&2
  return 1
}

if ! pg_up; then
  echo "services: starting PostgreSQL" >&2
  if ! command -v pg_ctlcluster >/dev/null; then
    echo "services: PostgreSQL is not installed (apt-get install postgresql), or set CONCIERGE_DATABASE_URL to a running server" >&2
    exit 1
  fi
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main start
  wait_for PostgreSQL pg_up
fi

if ! redis_up; then
  echo "services: starting Redis" >&2
  if ! command -v redis-server >/dev/null; then
    echo "services: Redis is not installed (apt-get install redis-server), or set CONCIERGE_REDIS_URL to a running server" >&2
    exit 1
  fi
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no
  wait_for Redis redis_up
fi
