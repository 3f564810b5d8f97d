package account

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"

	"github.com/conciergehq/concierge/core/domain"
)

// Password length bounds, in characters. Ten characters is the least NIST
// SP 800-63B's eight rounded up for a console that holds API keys and
// webhook secrets; 128 bounds the work of hashing an attacker's input.
const (
	MinPasswordLength = 10
	MaxPasswordLength = 128
)

// Argon2Params are argon2id's cost parameters. They are written into every
// hash (a PHC string), so raising them later leaves old hashes verifiable.
type Argon2Params struct {
	Time      uint32 // passes
	MemoryKiB uint32
	Threads   uint8
	SaltLen   uint32
	KeyLen    uint32
}

// DefaultArgon2Params are OWASP's recommended minimum for argon2id (19 MiB,
// two passes, one thread): BenchmarkDefaultHash measured 35 to 46 ms a hash
// (once 111 ms, with other builds running) on this project's shared 2-core
// machine, so sign-in stays cheap for people and dear for guessers, and the
// per-IP throttle bounds the CPU one client can make us spend.
var DefaultArgon2Params = Argon2Params{Time: 2, MemoryKiB: 19 * 1024, Threads: 1, SaltLen: 16, KeyLen: 32}

// ValidatePassword checks a new password's length. Errors are
// ValidationErrors on field "password".
func ValidatePassword(p string) error {
	n := utf8.RuneCountInString(p)
	switch {
	case !utf8.ValidString(p):
		return domain.InvalidField("password", "must be valid UTF-8 text")
	case n < MinPasswordLength:
		return domain.InvalidField("password", fmt.Sprintf("must be at least %d characters", MinPasswordLength))
	case n > MaxPasswordLength:
		return domain.InvalidField("password", fmt.Sprintf("must be at most %d characters", MaxPasswordLength))
	}
	return nil
}

var b64 = base64.RawStdEncoding

// hashPassword returns password's argon2id hash with a new random salt, as a
// PHC string: $argon2id$v=19$m=...,t=...,p=...$salt$key.
func hashPassword(password string, p Argon2Params) string {
	salt := make([]byte, p.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	key := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, p.KeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Time, p.Threads,
		b64.EncodeToString(salt), b64.EncodeToString(key))
}

var errBadHash = errors.New("account: stored password hash is not an argon2id PHC string")

// checkPassword reports whether password matches the PHC-encoded hash,
// comparing in constant time with the parameters stored in the hash.
func checkPassword(password, encoded string) (bool, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	var p Argon2Params
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Time, &p.Threads); err != nil ||
		p.Time == 0 || p.Threads == 0 || p.MemoryKiB == 0 {
		return false, errBadHash
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil || len(salt) == 0 {
		return false, errBadHash
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false, errBadHash
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}
