//go:build linux

package sandbox_test

import (
	"context"
	"testing"

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
