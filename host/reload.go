package host

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostd/hostd/host/admin"
	"github.com/hostd/hostd/tenant"
)

// drainPoll is how often a retired vhost checks for its last request.
const drainPoll = 20 * time.Millisecond

// Reload re-reads the main file the server was started with and every
// vhost file and validates them as `hostd check` does. Each tenant is
// applied on its own: a vhost whose new files are valid is added or
// rebuilt; one whose files have errors (or whose rebuild fails) keeps
// serving its previous version, with its compiled hooks, warm workers and
// shared dictionary; a new file with errors is not added. Only then are
// the routes replaced, in one store. An error in the main file refuses
// the whole reload: the old configuration keeps serving and the error (a
// tenant.ErrorList with file:line entries when the files are at fault) is
// returned. Unchanged vhosts keep their state; removed or replaced vhosts
// stop taking requests at once and close when their in-flight requests
// are done. Open connections are not touched. [server] settings other
// than vhosts are not reloaded: changing them is reported in Warnings and
// needs a restart. Reload is safe for concurrent use; reloads run one at
// a time.
func (s *Server) Reload(ctx context.Context) (admin.ReloadResult, error) {
	s.ops.reloadMu.Lock()
	defer s.ops.reloadMu.Unlock()
	s.notify(notifyReloading)
	defer s.notify(notifyReady)
	begin := time.Now()
	res, err := s.reload(ctx)
	res.Duration = time.Since(begin)
	if err != nil {
		s.ops.reloadFailures.Add(1)
		s.logger.Error("reload refused, the old configuration keeps serving", "err", err)
		return res, err
	}
	for _, c := range res.VHosts {
		if len(c.Errors) > 0 {
			s.logger.Error("reload: vhost "+c.Action, "vhost", c.Name, "file", c.File, "err", strings.Join(c.Errors, "\n"))
		}
	}
	for _, w := range res.Warnings {
		s.logger.Warn("reload: " + w)
	}
	if res.Partial() {
		s.ops.reloadPartial.Add(1)
	}
	s.logger.Info("reloaded", "generation", res.Generation, "unchanged", res.Unchanged, "added", res.Added,
		"changed", res.Changed, "removed", res.Removed, "kept", res.Kept, "not_added", res.NotAdded, "duration", res.Duration)
	return res, nil
}

// reloadedServerKey reports whether a reload applies the [server] key:
// those only shape how vhost files are found and validated.
func reloadedServerKey(name string) bool {
	switch name {
	case "vhosts", "default_sandbox", "min_uid":
		return true
	case "vhost_files_trusted", "tenant_roots", "allowed_log_dirs", "min_gid", "forbidden_groups",
		"allowed_sandboxes", "vhost_session_store", "nested_names", "require_tenant_owned":
		return true // the tenant policy checks the vhost files each reload reads (tenant/policy.go)
	}
	return false
}

// serverChanges names the [server] keys whose values differ and that a
// reload does not apply.
func serverChanges(a, b *tenant.Server) []string {
	var keys []string
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for i := range va.NumField() {
		name, _, _ := strings.Cut(va.Type().Field(i).Tag.Get("toml"), ",")
		if !reloadedServerKey(name) && !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			keys = append(keys, name)
		}
	}
	return keys
}

// reload reads the configuration files again and applies them.
func (s *Server) reload(ctx context.Context) (admin.ReloadResult, error) {
	cfg, broken, err := Validate(s.cfg.File)
	if err != nil {
		return admin.ReloadResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return admin.ReloadResult{}, err
	}
	var warnings []string
	if keys := serverChanges(&s.cfg.Server, &cfg.Server); len(keys) > 0 {
		warnings = append(warnings, fmt.Sprintf("[server] %s changed in %s: only vhosts are reloaded, restart hostd to apply them",
			strings.Join(keys, ", "), cfg.File))
	}
	res, err := s.apply(ctx, cfg, broken, false)
	res.Warnings = append(warnings, res.Warnings...)
	return res, err
}

// emptyRoutes are the routes of a server before its first configuration:
// generation 0, no vhost.
func emptyRoutes(cfg *tenant.Config) *routes {
	served := *cfg
	served.VHosts = nil
	return &routes{byName: map[string]*vhost{}, cfg: &served, problems: map[string][]string{}}
}

// apply serves cfg: the one path of start-up (New applies the first
// configuration to emptyRoutes) and Reload. It makes what cfg needs and
// the server does not have yet (the process spawner for CGI and PHP,
// io_uring rings, the ACME manager), plans cfg against the routes served
// now (planReload), builds the new and changed vhosts, swaps the routes
// and retires the vhosts no longer served once their requests are done.
// broken are the vhost files Validate refused. strict (start-up without
// SkipBroken) refuses cfg when a vhost fails to build: nothing of it is
// served and the error names every failure.
func (s *Server) apply(ctx context.Context, cfg *tenant.Config, broken []*tenant.Broken, strict bool) (admin.ReloadResult, error) {
	if err := s.ensureSpawner(cfg); err != nil { // php.go
		return admin.ReloadResult{}, err
	}
	if err := s.ensureRings(cfg); err != nil { // gate.go
		return admin.ReloadResult{}, err
	}
	if err := s.setupACME(cfg); err != nil { // acme.go
		return admin.ReloadResult{}, err
	}
	old := s.routes.Load()
	p := planReload(old, cfg, broken)
	if err := ctx.Err(); err != nil {
		return admin.ReloadResult{}, err
	}
	toBuild := make([]*tenant.VHost, len(p.build))
	for i, b := range p.build {
		toBuild[i] = b.vc
	}
	built, errs := s.buildVHosts(toBuild)
	if err := errors.Join(errs...); err != nil && strict {
		for _, v := range built {
			if v != nil {
				v.close()
			}
		}
		return admin.ReloadResult{}, err
	}
	for i, b := range p.build {
		if errs[i] == nil {
			p.serve(built[i], b.action)
		} else {
			p.notBuilt(b, errs[i])
		}
	}
	rt := p.routes(cfg, old.gen+1)
	s.routes.Store(rt)
	retired := p.retired(old, rt)
	served := func(name string) bool { return rt.byName[name] != nil }
	s.states.forget(served)
	s.sessMem.forget(served)
	s.guard.cpu.forget(served) // cpugate.go
	res := p.result(rt.gen)
	for v := range p.inUse {
		v.openFiles.flush() // a reload re-checks every static file through the gate (openfiles.go)
	}
	s.drain(retired)
	return res, nil
}

// drain retires vhosts no longer served: requests that looked one up
// route again (vhostOps.enter), and each closes once its requests in
// progress are done.
func (s *Server) drain(retired []*vhost) {
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
}

// notBuilt records a vhost that failed to build: its previous version, if
// any, keeps serving.
func (p *reloadPlan) notBuilt(b buildItem, err error) {
	msg := err.Error()
	p.unclaim(b.vc.Names())
	if b.prev != nil {
		p.keep(b.prev, b.vc.File, []string{msg})
		return
	}
	p.changes = append(p.changes, admin.VHostChange{Name: b.vc.ServerName, File: b.vc.File, Action: admin.ChangeNotAdded, Errors: []string{msg}})
	p.problems[b.vc.File] = []string{msg}
}

// retired returns the vhosts of old that rt no longer serves (removed, or
// replaced by a rebuilt version) and records the removed ones.
func (p *reloadPlan) retired(old, rt *routes) []*vhost {
	var retired []*vhost
	for _, v := range old.all {
		if !p.inUse[v] {
			retired = append(retired, v)
			if rt.byName[v.cfg.ServerName] == nil {
				p.changes = append(p.changes, admin.VHostChange{Name: v.cfg.ServerName, File: v.cfg.File, Action: admin.ChangeRemoved})
			}
		}
	}
	return retired
}

// result sums up the plan's changes, in file order.
func (p *reloadPlan) result(gen uint64) admin.ReloadResult {
	slices.SortStableFunc(p.changes, func(a, b admin.VHostChange) int { return strings.Compare(a.File, b.File) })
	res := admin.ReloadResult{VHosts: p.changes, Unchanged: p.unchanged, Generation: gen}
	for _, c := range p.changes {
		switch c.Action {
		case admin.ChangeAdded:
			res.Added++
		case admin.ChangeChanged:
			res.Changed++
		case admin.ChangeRemoved:
			res.Removed++
		case admin.ChangeKept:
			res.Kept++
		case admin.ChangeNotAdded:
			res.NotAdded++
		}
	}
	return res
}

// reloadPlan decides, vhost by vhost, what the next routes serve.
type reloadPlan struct {
	claimed   map[string]*vhost // name -> the vhost serving it next (nil: one being built)
	order     []*vhost          // vhosts served next
	inUse     map[*vhost]bool   // old vhosts that stay
	build     []buildItem
	changes   []admin.VHostChange
	unchanged int
	problems  map[string][]string // file -> errors of kept and not added vhosts
}

type buildItem struct {
	vc     *tenant.VHost
	prev   *vhost // the version served now, nil for a new vhost
	action string
}

// planReload matches the new configuration against the routes served now:
// by file for broken files (whose names may be unreadable), by server
// name for valid ones. A broken file's previous version keeps its names;
// a valid vhost claiming one of them is refused until that file is fixed.
func planReload(old *routes, cfg *tenant.Config, broken []*tenant.Broken) *reloadPlan {
	p := &reloadPlan{claimed: map[string]*vhost{}, inUse: map[*vhost]bool{}, problems: map[string][]string{}}
	byName := make(map[string]*vhost, len(old.all))
	byFile := make(map[string]*vhost, len(old.all))
	for _, v := range old.all {
		byName[v.cfg.ServerName] = v
		byFile[v.cfg.File] = v
	}
	for _, b := range broken {
		errs := make([]string, len(b.Errs))
		for i, e := range b.Errs {
			errs[i] = e.Error()
		}
		if prev := byFile[b.File]; prev != nil && !p.inUse[prev] {
			p.keep(prev, b.File, errs)
			continue
		}
		name := ""
		if len(b.Names) > 0 {
			name = b.Names[0]
		}
		p.changes = append(p.changes, admin.VHostChange{Name: name, File: b.File, Action: admin.ChangeNotAdded, Errors: errs})
		p.problems[b.File] = errs
	}
	for _, vc := range cfg.VHosts {
		prev := byName[vc.ServerName]
		if prev != nil && p.inUse[prev] {
			prev = nil // kept above under its own, broken, file
		}
		if conflict := p.conflict(vc.Names()); conflict != nil {
			msg := fmt.Sprintf("%s:%d: server name %q is still served by the previous version of %s, kept because that file has errors: fix it first",
				vc.File, vc.Line(), conflict.name, conflict.v.cfg.File)
			if prev != nil {
				p.keep(prev, vc.File, []string{msg})
			} else {
				p.changes = append(p.changes, admin.VHostChange{Name: vc.ServerName, File: vc.File, Action: admin.ChangeNotAdded, Errors: []string{msg}})
				p.problems[vc.File] = []string{msg}
			}
			continue
		}
		switch {
		case prev != nil && reflect.DeepEqual(prev.cfg, vc) && !certChanged(prev):
			p.unchanged++
			p.inUse[prev] = true
			p.order = append(p.order, prev)
			p.claim(vc.Names(), prev)
		case prev != nil:
			p.build = append(p.build, buildItem{vc: vc, prev: prev, action: admin.ChangeChanged})
			p.claim(vc.Names(), nil)
		default:
			p.build = append(p.build, buildItem{vc: vc, action: admin.ChangeAdded})
			p.claim(vc.Names(), nil)
		}
	}
	return p
}

type nameConflict struct {
	name string
	v    *vhost
}

// conflict returns the first of names held by a vhost kept on its
// previous version.
func (p *reloadPlan) conflict(names []string) *nameConflict {
	for _, n := range names {
		if v := p.claimed[n]; v != nil && p.problems[v.cfg.File] != nil {
			return &nameConflict{n, v}
		}
	}
	return nil
}

func (p *reloadPlan) claim(names []string, v *vhost) {
	for _, n := range names {
		p.claimed[n] = v
	}
}

// unclaim releases the names claimed for a vhost that failed to build.
func (p *reloadPlan) unclaim(names []string) {
	for _, n := range names {
		if v, ok := p.claimed[n]; ok && v == nil {
			delete(p.claimed, n)
		}
	}
}

// keep serves prev, the version served now, for a file whose new version
// is not applied, with the names nobody else claimed.
func (p *reloadPlan) keep(prev *vhost, file string, errs []string) {
	p.inUse[prev] = true
	p.order = append(p.order, prev)
	for _, n := range prev.cfg.Names() {
		if _, taken := p.claimed[n]; !taken {
			p.claimed[n] = prev
		}
	}
	p.problems[prev.cfg.File] = errs
	p.changes = append(p.changes, admin.VHostChange{Name: prev.cfg.ServerName, File: file, Action: admin.ChangeKept, Errors: errs})
}

// serve adds a newly built vhost.
func (p *reloadPlan) serve(v *vhost, action string) {
	p.order = append(p.order, v)
	p.claim(v.cfg.Names(), v)
	p.changes = append(p.changes, admin.VHostChange{Name: v.cfg.ServerName, File: v.cfg.File, Action: action})
}

// routes builds the next routes: every vhost in file order, each name to
// the vhost that claimed it.
func (p *reloadPlan) routes(cfg *tenant.Config, gen uint64) *routes {
	slices.SortStableFunc(p.order, func(a, b *vhost) int { return strings.Compare(a.cfg.File, b.cfg.File) })
	served := *cfg
	served.VHosts = make([]*tenant.VHost, 0, len(p.order))
	rt := &routes{byName: make(map[string]*vhost, len(p.claimed)), cfg: &served, gen: gen, problems: p.problems}
	for _, v := range p.order {
		rt.all = append(rt.all, v)
		served.VHosts = append(served.VHosts, v.cfg)
	}
	for n, v := range p.claimed {
		if v != nil {
			rt.byName[n] = v
		}
	}
	return rt
}

// Generation returns the configuration generation: 1 at start, +1 per
// successful reload.
func (s *Server) Generation() uint64 { return s.routes.Load().gen }

// Config returns the configuration being served now.
func (s *Server) Config() *tenant.Config { return s.routes.Load().cfg }

// buildVHosts builds a vhost for each of vcs, on every CPU at once: with
// thousands of vhosts, loading certificates dominates start and reload.
// errs[i] is the error of vcs[i] (vs[i] is then nil), naming its file.
func (s *Server) buildVHosts(vcs []*tenant.VHost) (vs []*vhost, errs []error) {
	vs = make([]*vhost, len(vcs))
	errs = make([]error, len(vcs))
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
	return vs, errs
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
