package tickets

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hostd/hostd/host/internal/statefile"
)

// ticketKey is one session ticket key and the time it was created.
type ticketKey struct {
	created time.Time
	key     [32]byte
}

// Keys keeps the TLS session ticket keys in a file of the state
// directory (0600), one "UNIX-SECONDS HEX-KEY" line per key, newest first.
// The newest key encrypts new tickets; a key is replaced after one
// rotation period and still decrypts for one more, so tickets issued just
// before a rotation stay valid for the overlap window. Several servers
// sharing the file (a restart, or a second node on the same state_dir)
// converge on the same keys: each one re-reads the file, and only the
// first to find the newest key expired adds a new one, under a file lock.
// Its methods are safe for concurrent use.
type Keys struct {
	file   string
	period time.Duration
	logger *slog.Logger

	mu   sync.Mutex
	last [][32]byte // keys last returned by sync
}

// DefaultRotation is the rotation period of a Config not made by
// tenant.Load, which sets server.ticket_rotation's default.
const DefaultRotation = 24 * time.Hour

// New returns the keys kept in file, rotated every period (DefaultRotation
// when period <= 0). It touches no file until Sync.
func New(file string, period time.Duration, logger *slog.Logger) *Keys {
	if period <= 0 {
		period = DefaultRotation
	}
	return &Keys{file: file, period: period, logger: logger}
}

// Sync reads the key file, rotates it when its newest key is older than
// the period at now, drops keys older than two periods, writes it back
// when anything changed, and returns the keys newest first. changed
// reports whether they differ from the previous call's.
func (tk *Keys) Sync(now time.Time) (keys [][32]byte, changed bool, err error) {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(tk.file), 0o700); err != nil {
		return nil, false, fmt.Errorf("ticket keys: %w", err)
	}
	unlock, err := lockFile(tk.file + ".lock")
	if err != nil {
		return nil, false, fmt.Errorf("ticket keys: %w", err)
	}
	defer unlock()
	list, err := readTicketKeys(tk.file)
	if err != nil {
		return nil, false, err
	}
	dirty := false
	if kept := slices.DeleteFunc(slices.Clone(list), func(k ticketKey) bool { return !now.Before(k.created.Add(2 * tk.period)) }); len(kept) != len(list) {
		list, dirty = kept, true
	}
	if len(list) == 0 || !now.Before(list[0].created.Add(tk.period)) {
		k := ticketKey{created: now}
		if _, err := rand.Read(k.key[:]); err != nil {
			return nil, false, fmt.Errorf("ticket keys: %w", err)
		}
		list, dirty = append([]ticketKey{k}, list...), true
	}
	if dirty {
		var b bytes.Buffer
		for _, k := range list {
			fmt.Fprintf(&b, "%d %s\n", k.created.Unix(), hex.EncodeToString(k.key[:]))
		}
		if err := statefile.WriteAtomic(tk.file, b.Bytes(), 0o600); err != nil {
			return nil, false, fmt.Errorf("ticket keys: %w", err)
		}
	}
	for _, k := range list {
		keys = append(keys, k.key)
	}
	changed = !slices.Equal(keys, tk.last)
	tk.last = keys
	return keys, changed, nil
}

// readTicketKeys parses the key file, newest key first; a missing file is
// an empty list.
func readTicketKeys(file string) ([]ticketKey, error) {
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ticket keys: %w", err)
	}
	var list []ticketKey
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		var k ticketKey
		secs, err1 := strconv.ParseInt(f[0], 10, 64)
		raw, err2 := hex.DecodeString(f[len(f)-1])
		if len(f) != 2 || err1 != nil || err2 != nil || len(raw) != len(k.key) {
			return nil, fmt.Errorf("ticket keys: %s:%d: want \"UNIX-SECONDS HEX-KEY\" (delete the file to start over)", file, n)
		}
		k.created = time.Unix(secs, 0)
		copy(k.key[:], raw)
		list = append(list, k)
	}
	slices.SortStableFunc(list, func(a, b ticketKey) int { return b.created.Compare(a.created) })
	return list, nil
}

// Apply syncs the keys at now and installs them in cfgs when they changed.
func (tk *Keys) Apply(now time.Time, cfgs ...*tls.Config) error {
	keys, changed, err := tk.Sync(now)
	if err != nil {
		return err
	}
	if changed {
		for _, cfg := range cfgs {
			cfg.SetSessionTicketKeys(keys)
		}
	}
	return nil
}

// Run re-reads and rotates the keys until ctx is done, often enough that
// a rotation by another node sharing the file is picked up well within
// the overlap window.
func (tk *Keys) Run(ctx context.Context, cfgs ...*tls.Config) {
	tk.Watch(ctx, func(keys [][32]byte) {
		for _, cfg := range cfgs {
			cfg.SetSessionTicketKeys(keys)
		}
	})
}

// Watch syncs the keys periodically until ctx is done and calls changed
// with them whenever they differ from the last sync.
func (tk *Keys) Watch(ctx context.Context, changed func(keys [][32]byte)) {
	t := time.NewTicker(min(tk.period/4, time.Minute))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			keys, ok, err := tk.Sync(now)
			if err != nil {
				tk.logger.Error("keys", "file", tk.file, "err", err)
			} else if ok {
				changed(keys)
			}
		}
	}
}
