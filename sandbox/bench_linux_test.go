//go:build linux

package sandbox_test

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/hostd/hostd/sandbox"
)

// BenchmarkRun measures one Run of a trivial fn per mode (as root).
func BenchmarkRun(b *testing.B) {
	modes := []sandbox.Mode{sandbox.ModeNone, sandbox.ModeThread, sandbox.ModeThreadPerRequest, sandbox.ModeInline}
	for _, mode := range modes {
		b.Run(string(mode), func(b *testing.B) {
			if mode.Switches() && !isRoot() {
				b.Skip("needs root")
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
	if !isRoot() {
		b.Skip("needs root")
	}
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

// BenchmarkSpawn measures starting, waiting for and finishing /bin/true as
// a tenant, without and with the four CGI resource limits (set through
// ptrace between execve and the first instruction).
func BenchmarkSpawn(b *testing.B) {
	if !isRoot() {
		b.Skip("needs root")
	}
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
		{"limits", sandbox.Limits{CPU: 30e9, Memory: 512 << 20, Processes: 512, OpenFiles: 1024}},
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

// cpuTime is the user and system CPU time of this process and its waited-for
// children.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}
