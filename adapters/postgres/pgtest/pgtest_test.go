package pgtest

import "testing"

func TestWithDatabase(t *testing.T) {
	tests := []struct{ dsn, want string }{
		{"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "postgres://postgres@127.0.0.1:5432/db1?sslmode=disable"},
		{"postgresql://u:p@h/", "postgresql://u:p@h/db1"},
		{"host=127.0.0.1 user=postgres dbname=postgres", "host=127.0.0.1 user=postgres dbname=postgres dbname=db1"},
	}
	for _, tt := range tests {
		got, err := withDatabase(tt.dsn, "db1")
		if err != nil || got != tt.want {
			t.Errorf("withDatabase(%q) = %q, %v; want %q", tt.dsn, got, err, tt.want)
		}
	}
}

func TestNewStoreMigrates(t *testing.T) {
	store := NewStore(t)
	if err := store.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
}
