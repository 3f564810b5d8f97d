package postgres

import "testing"

func TestUnwrapPlaceholders(t *testing.T) {
	tests := []struct{ in, want string }{
		{`SELECT * FROM t WHERE a = $1$ AND b = $12$`, `SELECT * FROM t WHERE a = $1 AND b = $12`},
		{`VALUES ($1$,$2$)`, `VALUES ($1,$2)`},
		{`SELECT '$' || $1$`, `SELECT '$' || $1`},
		{`SELECT $$x$$`, `SELECT $$x$$`},
		{`ends with $`, `ends with $`},
		{`$1`, `$1`},
	}
	for _, tt := range tests {
		if got := unwrapPlaceholders(tt.in); got != tt.want {
			t.Errorf("unwrapPlaceholders(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
