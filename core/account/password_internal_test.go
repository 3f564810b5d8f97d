package account

import (
	"errors"
	"strings"
	"testing"
)

var cheapParams = Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, SaltLen: 16, KeyLen: 32}

func TestPasswordHashes(t *testing.T) {
	t.Parallel()
	a, b := hashPassword("correct horse battery", cheapParams), hashPassword("correct horse battery", cheapParams)
	if a == b {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
	if !strings.HasPrefix(a, "$argon2id$v=19$m=64,t=1,p=1$") || strings.Count(a, "$") != 5 {
		t.Fatalf("hash %q is not a PHC argon2id string", a)
	}
	cases := []struct {
		name, password, hash string
		ok                   bool
		err                  error
	}{
		{"right", "correct horse battery", a, true, nil},
		{"wrong", "correct horse batterY", a, false, nil},
		{"empty", "", a, false, nil},
		// The parameters come from the hash, not the caller: old hashes stay valid.
		{"other parameters", "pw", hashPassword("pw", Argon2Params{Time: 2, MemoryKiB: 128, Threads: 2, SaltLen: 8, KeyLen: 16}), true, nil},
		{"bcrypt", "pw", "$2a$10$abcdefghijklmnopqrstuv", false, errBadHash},
		{"argon2i", "pw", strings.Replace(a, "argon2id", "argon2i", 1), false, errBadHash},
		{"other version", "pw", strings.Replace(a, "v=19", "v=16", 1), false, errBadHash},
		{"zero time", "pw", strings.Replace(a, "t=1", "t=0", 1), false, errBadHash},
		{"bad salt", "pw", strings.Replace(a, "$argon2id$v=19$m=64,t=1,p=1$", "$argon2id$v=19$m=64,t=1,p=1$!!", 1), false, errBadHash},
		{"empty", "pw", "", false, errBadHash},
	}
	for _, tc := range cases {
		ok, err := checkPassword(tc.password, tc.hash)
		if ok != tc.ok || !errors.Is(err, tc.err) {
			t.Errorf("%s: checkPassword = %v, %v; want %v, %v", tc.name, ok, err, tc.ok, tc.err)
		}
	}
}

func TestValidatePassword(t *testing.T) {
	t.Parallel()
	cases := []struct {
		password string
		ok       bool
	}{
		{"123456789", false},
		{"1234567890", true},
		{"ééééééééé", false}, // nine characters, eighteen bytes
		{"éééééééééé", true},
		{strings.Repeat("x", 128), true},
		{strings.Repeat("x", 129), false},
		{"\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\xf6", false},
	}
	for _, tc := range cases {
		if err := ValidatePassword(tc.password); (err == nil) != tc.ok {
			t.Errorf("ValidatePassword(%q) = %v, want ok=%v", tc.password, err, tc.ok)
		}
	}
}

// BenchmarkDefaultHash measures one argon2id hash at the default costs,
// which is what one sign-in (or a refused one) costs the server.
func BenchmarkDefaultHash(b *testing.B) {
	for b.Loop() {
		hashPassword("correct horse battery", DefaultArgon2Params)
	}
}
