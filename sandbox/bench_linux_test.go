//go:build linux

package sandbox_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// BenchmarkRun measures one Run of a trivial fn per mode (as root).
func BenchmarkRun(b *testing.B) {
	modes := []sandbox.Mode{sandbox.ModeNone, sandbox.ModeThread, sandbox.ModeThreadPerRequest, sandbox.ModeInline}
	for _, mode := range modes {
		b.Run(string(mode), func(b *testing.B) {
			if mode.Switches() {
				sandboxtest.RequireRoot(b)
			}
			tn, err := sandbox.NewTenant(sandbox.Options{Mode: mode, Identity: tenantA.sandbox()})
			if err != nil {
				b.Fatal(err)
			}
			defer tn.Close()
			ctx := context.Background()
			n := 0
			fn := func() { n++ }
			b.ReportAllocs()
			for b.Loop() {
				if err := tn.Run(ctx, fn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRunParallel measures thread-mode and inline Runs from many
// goroutines at once.
func BenchmarkRunParallel(b *testing.B) {
	sandboxtest.RequireRoot(b)
	for _, mode := range []sandbox.Mode{sandbox.ModeThread, sandbox.ModeInline} {
		b.Run(string(mode), func(b *testing.B) {
			tn, err := sandbox.NewTenant(sandbox.Options{Mode: mode, Identity: tenantA.sandbox()})
			if err != nil {
				b.Fatal(err)
			}
			defer tn.Close()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := tn.Run(context.Background(), func() {}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkGateOpen compares one open+close of a tenant's 0600 file by
// the ways hostd can have the kernel check it (as root): a plain openat2
// as the server (what ModeNone's gate does, no tenant check), the gate
// with the direct backend, the gate through the io_uring rings with the
// tenant's personality (ModeUring), and openat2 inside an inline switch or
// a thread hand-off (ModeInline, ModeThread).
func BenchmarkGateOpen(b *testing.B) {
	sandboxtest.RequireRoot(b)
	dir := b.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for p := filepath.Dir(dir); p != "/"; p = filepath.Dir(p) {
		fi, _ := os.Stat(p)
		if fi.Mode().Perm()&0o001 == 0 { // never touch /tmp's sticky bit
			os.Chmod(p, fi.Mode()&(os.ModePerm|os.ModeSticky|os.ModeSetuid|os.ModeSetgid)|0o111)
		}
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		b.Fatal(err)
	}
	os.Chown(file, int(tenantA.uid), int(tenantA.gid))
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(dfd)
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	rawOpen := func() {
		fd, err := unix.Openat2(dfd, "f", &how)
		if err != nil {
			b.Fatal(err)
		}
		unix.Close(fd)
	}
	gateOpen := func(g *sandbox.FS) func() {
		return func() {
			f, err := g.Open("f")
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	}
	rings, err := sandbox.NewRings(0)
	if err != nil {
		sandboxtest.Skipf(b, "io_uring unavailable: %v", err)
	}
	defer rings.Close()
	mk := func(mode sandbox.Mode) *sandbox.Tenant {
		tn, err := sandbox.NewTenant(sandbox.Options{Mode: mode, Identity: tenantA.sandbox(), Rings: rings})
		if err != nil {
			b.Fatal(err)
		}
		return tn
	}
	uringTn, inlineTn, threadTn := mk(sandbox.ModeUring), mk(sandbox.ModeInline), mk(sandbox.ModeThread)
	defer uringTn.Close()
	defer inlineTn.Close()
	defer threadTn.Close()
	direct, err := sandbox.NewDirectFS(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	ugate, err := uringTn.NewFS(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer ugate.Close()
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		fn   func()
	}{
		{"openat2", rawOpen},
		{"gate-direct", gateOpen(direct)},
		{"gate-uring", gateOpen(ugate)},
		{"inline-switch", func() { inlineTn.Run(ctx, rawOpen) }},
		{"thread-handoff", func() { threadTn.Run(ctx, rawOpen) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.fn()
			}
		})
	}
}

// BenchmarkSpawn measures starting, waiting for and finishing /bin/true as
// a tenant, without and with the four CGI resource limits (set through
// ptrace between execve and the first instruction), each in a PID
// namespace of its own (the default) and in the server's (Background,
// with the subreaper's sweep after Finished).
func BenchmarkSpawn(b *testing.B) {
	sandboxtest.RequireRoot(b)
	s, err := sandbox.NewSpawner(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	id := tenantA.sandbox()
	for _, tc := range []struct {
		name string
		lim  sandbox.Limits
	}{
		{"no-limits", sandbox.Limits{}},
		{"no-limits-shared-pidns", sandbox.Limits{Background: true}},
		{"limits", sandbox.Limits{CPU: 30e9, Memory: 512 << 20, Processes: 512, OpenFiles: 1024}},
		{"limits-shared-pidns", sandbox.Limits{CPU: 30e9, Memory: 512 << 20, Processes: 512, OpenFiles: 1024, Background: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			before := cpuTime()
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				if err := s.StartLimited(context.Background(), cmd, &id, tc.lim); err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
				s.Finished(cmd, tc.lim)
			}
			// CPU (this process and its children) per spawn: steadier
			// than wall time on a shared machine.
			b.ReportMetric(float64((cpuTime()-before).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// BenchmarkSpawnPIDNamespace alternates the two ways of starting /bin/true
// as a tenant with the CGI limits, in a PID namespace of its own (the
// default) and in the server's (Background), so that both see the same
// machine load, and reports the CPU of each per start and their ratio, and
// the wall time from start to Finished.
func BenchmarkSpawnPIDNamespace(b *testing.B) {
	sandboxtest.RequireRoot(b)
	s, err := sandbox.NewSpawner(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if !s.Containment().PIDNamespace {
		b.Fatalf("no PID namespaces here: %s", s.Containment().PIDNamespaceWhyNot)
	}
	id := tenantA.sandbox()
	lim := sandbox.Limits{CPU: 30e9, Memory: 512 << 20, Processes: 512, OpenFiles: 1024}
	var cpu, wall [2]time.Duration // own namespace, shared
	b.ReportAllocs()
	for b.Loop() {
		for i, background := range []bool{false, true} {
			lim.Background = background
			before, start := cpuTime(), time.Now()
			cmd := exec.Command("/bin/true")
			if err := s.StartLimited(context.Background(), cmd, &id, lim); err != nil {
				b.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				b.Fatal(err)
			}
			s.Finished(cmd, lim)
			wall[i] += time.Since(start)
			// The shared case's orphan sweep runs right after Finished
			// on another goroutine: let it run inside its own window
			// (sleeping costs no CPU; the same for both).
			time.Sleep(2 * time.Millisecond)
			cpu[i] += cpuTime() - before
		}
	}
	b.ReportMetric(float64(cpu[0].Microseconds())/float64(b.N), "own-ns-cpu-µs/op")
	b.ReportMetric(float64(cpu[1].Microseconds())/float64(b.N), "shared-ns-cpu-µs/op")
	b.ReportMetric(float64(cpu[0])/float64(cpu[1]), "ratio")
	// Start to Finished: the namespace's teardown is in the child's exit.
	b.ReportMetric(float64(wall[0].Microseconds())/float64(b.N), "own-ns-wall-µs/op")
	b.ReportMetric(float64(wall[1].Microseconds())/float64(b.N), "shared-ns-wall-µs/op")
}

// cpuTime is the user and system CPU time of this process and its waited-for
// children.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}
