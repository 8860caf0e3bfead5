package scripting

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"net/http"
	"time"
)

// MaxRandomBytes bounds hostd.random_bytes and random_token.
const MaxRandomBytes = 4096

// hashes are the digests of hostd.digest and hostd.hmac: md5 and sha1 for
// interoperating with older systems, sha256 and sha512.
var hashes = map[string]func() hash.Hash{
	"md5": md5.New, "sha1": sha1.New, "sha256": sha256.New, "sha512": sha512.New,
}

// Digest returns the digest alg (md5, sha1, sha256, sha512) of data.
func Digest(alg, data string) ([]byte, error) {
	h, ok := hashes[alg]
	if !ok {
		return nil, fmt.Errorf("unknown digest %q (want md5, sha1, sha256 or sha512)", alg)
	}
	d := h()
	d.Write([]byte(data))
	return d.Sum(nil), nil
}

// HMAC returns the HMAC of data with key and the digest alg.
func HMAC(alg, key, data string) ([]byte, error) {
	h, ok := hashes[alg]
	if !ok {
		return nil, fmt.Errorf("unknown digest %q (want md5, sha1, sha256 or sha512)", alg)
	}
	m := hmac.New(h, []byte(key))
	m.Write([]byte(data))
	return m.Sum(nil), nil
}

// RandomBytes returns n bytes from crypto/rand (0 <= n <= MaxRandomBytes).
func RandomBytes(n int) ([]byte, error) {
	if n < 0 || n > MaxRandomBytes {
		return nil, fmt.Errorf("length must be from 0 to %d", MaxRandomBytes)
	}
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return b, nil
}

// RandomToken returns n random bytes as unpadded base64url text (n = 32
// gives 43 characters, 256 bits).
func RandomToken(n int) (string, error) {
	b, err := RandomBytes(n)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// DecodeBase64 decodes standard or URL-safe base64, padded or not.
func DecodeBase64(s string) ([]byte, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, true
		}
	}
	return nil, false
}

// HTTPTime formats Unix time t (seconds) as an HTTP date (RFC 9110
// IMF-fixdate), for a t within years 1 to 9999.
func HTTPTime(t float64) (string, error) {
	if !(t >= -62135596800 && t <= 253402300799) {
		return "", argError(1, "time out of range")
	}
	return time.Unix(int64(t), 0).UTC().Format(http.TimeFormat), nil
}

// ParseHTTPTime parses an HTTP date in any of the three formats of RFC
// 9110 into Unix seconds.
func ParseHTTPTime(s string) (int64, bool) {
	t, err := http.ParseTime(s)
	if err != nil {
		return 0, false
	}
	return t.Unix(), true
}
