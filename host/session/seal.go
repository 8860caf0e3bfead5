package session

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync/atomic"

	"golang.org/x/crypto/chacha20poly1305"
)

// Sealing. Every session value is encrypted and authenticated with
// XChaCha20-Poly1305 under a key of its own vhost, derived (HKDF-SHA256)
// from a server secret that only hostd holds; the vhost name and the
// session id are the associated data, so a value copied to another key,
// vhost or id does not open. The store key is an HMAC of the vhost name
// and the id under another key derived from the same secret, so someone
// who can read the store (a tenant's CGI on a shared Redis) can neither
// tell whose sessions are there, nor read them, nor write one that a
// vhost would accept.

// sealVersion is the first byte of a sealed value.
const sealVersion = 1

// ErrSealBroken is returned by open for a value that fails
// authentication: tampered with, sealed for another vhost or id, or
// sealed with a secret no longer kept.
var ErrSealBroken = errors.New("session: sealed value failed authentication")

// Keyring holds the server secrets sessions are sealed with, newest
// first: the newest seals, every one opens (the previous one is kept for a
// rotation period). The zero value has no secret; Set installs them. It is
// safe for concurrent use.
type Keyring struct {
	p atomic.Pointer[keyset]
}

type keyset struct {
	secrets [][32]byte
}

// NewKeyring returns a keyring holding secrets (newest first).
func NewKeyring(secrets ...[32]byte) *Keyring {
	k := new(Keyring)
	k.Set(secrets)
	return k
}

// Set replaces the secrets (newest first). A nil or empty list keeps the
// current ones.
func (k *Keyring) Set(secrets [][32]byte) {
	if len(secrets) == 0 {
		return
	}
	k.p.Store(&keyset{secrets: append([][32]byte(nil), secrets...)})
}

func (k *Keyring) load() *keyset { return k.p.Load() }

// randomKeyring is the keyring of a Manager made without one: a secret of
// its own, so sessions live as long as the Manager.
func randomKeyring() *Keyring {
	var s [32]byte
	rand.Read(s[:])
	return NewKeyring(s)
}

// vhostKey is the keys one secret gives one vhost.
type vhostKey struct {
	aead cipher.AEAD
	mac  []byte // store key HMAC key
}

// derived is a Manager's vhost keys for one keyset, newest first.
type derived struct {
	src  *keyset
	keys []vhostKey
}

func deriveKeys(ks *keyset, vhost string) (*derived, error) {
	d := &derived{src: ks}
	for _, s := range ks.secrets {
		ek, err := hkdf.Key(sha256.New, s[:], nil, "hostd session seal v1\x00"+vhost, chacha20poly1305.KeySize)
		if err != nil {
			return nil, err
		}
		mk, err := hkdf.Key(sha256.New, s[:], nil, "hostd session key v1\x00"+vhost, 32)
		if err != nil {
			return nil, err
		}
		a, err := chacha20poly1305.NewX(ek)
		if err != nil {
			return nil, err
		}
		d.keys = append(d.keys, vhostKey{aead: a, mac: mk})
	}
	return d, nil
}

// storeKey is the store key of session id under k: "hostd:sess:" and the
// hex HMAC-SHA256 of the vhost and the id (75 bytes, within memcached's
// 250).
func (k *vhostKey) storeKey(vhost, id string) string {
	h := hmac.New(sha256.New, k.mac)
	h.Write([]byte(vhost))
	h.Write([]byte{0})
	h.Write([]byte(id))
	return "hostd:sess:" + hex.EncodeToString(h.Sum(nil))
}

func associatedData(vhost, id string) []byte {
	return []byte("hostd-session\x00" + vhost + "\x00" + id)
}

// seal encrypts plain for vhost and id: version byte, 24-byte nonce,
// ciphertext and tag.
func (k *vhostKey) seal(vhost, id string, plain []byte) []byte {
	out := make([]byte, 1+chacha20poly1305.NonceSizeX, 1+chacha20poly1305.NonceSizeX+len(plain)+chacha20poly1305.Overhead)
	out[0] = sealVersion
	rand.Read(out[1:])
	return k.aead.Seal(out, out[1:], plain, associatedData(vhost, id))
}

// open reverses seal, or returns ErrSealBroken.
func (k *vhostKey) open(vhost, id string, sealed []byte) ([]byte, error) {
	if len(sealed) < 1+chacha20poly1305.NonceSizeX+chacha20poly1305.Overhead || sealed[0] != sealVersion {
		return nil, ErrSealBroken
	}
	nonce, ct := sealed[1:1+chacha20poly1305.NonceSizeX], sealed[1+chacha20poly1305.NonceSizeX:]
	p, err := k.aead.Open(nil, nonce, ct, associatedData(vhost, id))
	if err != nil {
		return nil, ErrSealBroken
	}
	return p, nil
}
