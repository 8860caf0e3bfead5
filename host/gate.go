package host

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/engines"
	"github.com/hostd/hostd/tenant"
)

// vmPools are the server's hook VMs shared by every vhost whose sandbox
// mode does not switch threads (uring, none, suexec): a run takes any VM
// and leaves nothing of its tenant in it, so such a tenant costs its
// compiled scripts, not VMs. The thread modes keep VMs per tenant.
type vmPools struct {
	pools map[string]scripting.Pool // by hook extension
}

func newVMPools() *vmPools {
	n := 4 * runtime.GOMAXPROCS(0)
	p := &vmPools{pools: make(map[string]scripting.Pool)}
	for _, l := range engines.Builtin() {
		p.pools[l.Ext] = l.NewPool(n)
	}
	return p
}

func (p *vmPools) close() {
	for _, pool := range p.pools {
		pool.Close()
	}
}

// gateRoots are the directories a vhost's file gate allows, in order: the
// document root (where relative names resolve, and the only root static
// files and CGI scripts are served from), the directories of its hooks,
// and its io_roots.
func gateRoots(vc *tenant.VHost) []string {
	roots := []string{vc.Root}
	for _, h := range vc.Hooks {
		if d := filepath.Dir(h.File); !slices.Contains(roots, d) {
			roots = append(roots, d)
		}
	}
	for _, r := range vc.IORoots {
		if !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
	}
	return roots
}

// ensureRings sets up the server's io_uring rings when a vhost of cfg uses
// mode uring and they do not exist yet. They live until Close.
func (s *Server) ensureRings(cfg *tenant.Config) error {
	if s.rings != nil {
		return nil
	}
	for _, vc := range cfg.VHosts {
		if vc.Mode == string(sandbox.ModeUring) {
			r, err := sandbox.NewRings(0)
			if err != nil {
				return fmt.Errorf("vhost %s: %w", vc.ServerName, err)
			}
			s.rings = r
			return nil
		}
	}
	return nil
}

// URingPersonalities reports how many tenants have an io_uring personality
// registered on the server's rings: by hostd's count, and by the kernel's
// (a NOP naming each id from 1 to upTo; pass 0 to skip it). Both are 0
// when no vhost uses mode uring. It is a debugging and test aid.
func (s *Server) URingPersonalities(upTo int) (counted, kernel int, err error) {
	s.ops.reloadMu.Lock() // s.rings is set by reloads
	r := s.rings
	s.ops.reloadMu.Unlock()
	if r == nil {
		return 0, 0, nil
	}
	if upTo > 0 {
		kernel, err = r.RegisteredOnRings(upTo)
	}
	return r.Personalities(), kernel, err
}
