package host

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/tenant"
)

// drainPoll is how often a retired vhost checks for its last request.
const drainPoll = 20 * time.Millisecond

// ReloadResult describes a successful reload.
type ReloadResult struct {
	Generation uint64        // the new configuration generation
	Kept       int           // vhosts whose settings did not change: same state, warm workers
	Added      int           // new vhosts
	Changed    int           // vhosts rebuilt because their settings changed
	Removed    int           // vhosts dropped; they drain and close in the background
	Duration   time.Duration // load, validation and swap
}

// Reload re-reads the main file the server was started with and every
// vhost file, validates all of it, builds the vhosts whose settings
// changed, and only then replaces the routes. On any error the old
// configuration keeps serving and the error (a tenant.ErrorList with
// file:line entries when the files are at fault) is returned. Vhosts
// whose tenant.VHost is unchanged keep their state (certificate, worker
// threads, hook VMs); removed or replaced vhosts stop taking requests at
// once and close when their in-flight requests are done. Open connections
// are not touched. [server] settings other than vhosts are not reloaded:
// changing them is logged and needs a restart. Reload is safe for
// concurrent use; reloads run one at a time.
func (s *Server) Reload(ctx context.Context) (ReloadResult, error) {
	s.ops.reloadMu.Lock()
	defer s.ops.reloadMu.Unlock()
	begin := time.Now()
	res, err := s.reload(ctx)
	res.Duration = time.Since(begin)
	if err != nil {
		s.ops.reloadFailures.Add(1)
		s.logger.Error("reload refused, the old configuration keeps serving", "err", err)
		return res, err
	}
	s.logger.Info("reloaded", "generation", res.Generation, "kept", res.Kept, "added", res.Added,
		"changed", res.Changed, "removed", res.Removed, "duration", res.Duration)
	return res, nil
}

func (s *Server) reload(ctx context.Context) (ReloadResult, error) {
	var res ReloadResult
	cfg, err := tenant.Load(s.cfg.File)
	if err != nil {
		return res, err
	}
	if err := Check(cfg); err != nil {
		return res, err
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if !reflect.DeepEqual(cfg.Server, s.cfg.Server) {
		s.logger.Warn("reload: [server] settings changed; only vhosts are reloaded, restart to apply the rest", "file", cfg.File)
	}
	if s.spawner == nil && needsSpawner(cfg.VHosts) { // php.go
		if s.spawner, err = sandbox.NewSpawner(s.logger); err != nil {
			return res, fmt.Errorf("cgi spawner: %w", err)
		}
	}
	if err := s.setupACME(cfg); err != nil {
		return res, err
	}
	old := s.routes.Load()
	oldByName := make(map[string]*vhost, len(old.all))
	for _, v := range old.all {
		oldByName[v.cfg.ServerName] = v
	}
	rt := &routes{byName: make(map[string]*vhost, len(old.byName)), cfg: cfg, gen: old.gen + 1}
	kept := make(map[*vhost]bool, len(old.all))
	var toBuild []*tenant.VHost
	for _, vc := range cfg.VHosts {
		switch v := oldByName[vc.ServerName]; {
		case v != nil && reflect.DeepEqual(v.cfg, vc) && !certChanged(v):
			kept[v] = true
			res.Kept++
		case v != nil:
			res.Changed++
			toBuild = append(toBuild, vc)
		default:
			res.Added++
			toBuild = append(toBuild, vc)
		}
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	built, err := s.buildVHosts(toBuild)
	if err != nil {
		return res, err
	}
	for i, vc := range toBuild {
		oldByName[vc.ServerName] = built[i] // now the vhost to serve
	}
	for _, vc := range cfg.VHosts {
		v := oldByName[vc.ServerName]
		rt.all = append(rt.all, v)
		for _, n := range vc.Names() {
			rt.byName[n] = v
		}
	}
	s.routes.Store(rt)
	var retired []*vhost
	for _, v := range old.all {
		if !kept[v] { // removed, or replaced by a rebuilt vhost
			retired = append(retired, v)
		}
	}
	res.Removed = len(retired) - res.Changed
	res.Generation = rt.gen
	for _, v := range retired {
		v.ops.retired.Store(true)
	}
	if len(retired) > 0 {
		s.ops.drains.Add(1)
		go func() {
			defer s.ops.drains.Done()
			for _, v := range retired {
				for v.ops.active.Load() > 0 {
					time.Sleep(drainPoll)
				}
				v.close()
			}
		}()
	}
	return res, nil
}

// Generation returns the configuration generation: 1 at start, +1 per
// successful reload.
func (s *Server) Generation() uint64 { return s.routes.Load().gen }

// Config returns the configuration being served now.
func (s *Server) Config() *tenant.Config { return s.routes.Load().cfg }

// buildVHosts builds a vhost for each of vcs, on every CPU at once: with
// thousands of vhosts, loading certificates dominates start and reload.
// On error it closes what it built and returns the first error in vcs
// order.
func (s *Server) buildVHosts(vcs []*tenant.VHost) ([]*vhost, error) {
	vs := make([]*vhost, len(vcs))
	errs := make([]error, len(vcs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(vcs)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(vcs); i = int(next.Add(1) - 1) {
				if vs[i], errs[i] = newVHost(s, vcs[i]); errs[i] != nil {
					errs[i] = fmt.Errorf("%s: vhost %s: %w", vcs[i].File, vcs[i].ServerName, errs[i])
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			for _, v := range vs {
				if v != nil {
					v.close()
				}
			}
			return nil, err
		}
	}
	return vs, nil
}

// certChanged reports whether a vhost's tls_cert file now holds another
// certificate than the one it serves, so that a reload picks up a renewed
// certificate even when the vhost file did not change.
func certChanged(v *vhost) bool {
	if v.cfg.TLSCert == "" || v.cert == nil || len(v.cert.Certificate) == 0 {
		return false
	}
	b, err := os.ReadFile(v.cfg.TLSCert)
	if err != nil {
		return true // tenant.Load read it a moment ago; rebuild and report
	}
	for {
		var blk *pem.Block
		if blk, b = pem.Decode(b); blk == nil {
			return true
		}
		if blk.Type == "CERTIFICATE" {
			return !bytes.Equal(blk.Bytes, v.cert.Certificate[0])
		}
	}
}
