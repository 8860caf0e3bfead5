package sandbox_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

func TestParseMode(t *testing.T) {
	tests := []struct {
		in       string
		want     sandbox.Mode
		switches bool
		wantErr  bool
	}{
		{"none", sandbox.ModeNone, false, false},
		{"suexec", sandbox.ModeSuexec, false, false},
		{"thread", sandbox.ModeThread, true, false},
		{"thread-per-request", sandbox.ModeThreadPerRequest, true, false},
		{"inline", sandbox.ModeInline, true, false},
		{"", "", false, true},
		{"Thread", "", false, true},
		{"chroot", "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := sandbox.ParseMode(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseMode(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want || got.Switches() != tt.switches {
				t.Fatalf("ParseMode(%q) = %q (switches %v), want %q (%v)", tt.in, got, got.Switches(), tt.want, tt.switches)
			}
		})
	}
}

func TestNewTenantValidation(t *testing.T) {
	tests := []struct {
		name    string
		opts    sandbox.Options
		wantErr string
	}{
		{"none root ok", sandbox.Options{Mode: sandbox.ModeNone}, ""},
		{"empty mode is none", sandbox.Options{}, ""},
		{"bad mode", sandbox.Options{Mode: "jail"}, "unknown mode"},
		{"thread uid 0", sandbox.Options{Mode: sandbox.ModeThread, Identity: sandbox.Identity{UID: 0, GID: 5}}, "must not be 0"},
		{"inline gid 0", sandbox.Options{Mode: sandbox.ModeInline, Identity: sandbox.Identity{UID: 5, GID: 0}}, "must not be 0"},
		{"tpr group 0", sandbox.Options{Mode: sandbox.ModeThreadPerRequest, Identity: sandbox.Identity{UID: 5, GID: 5, Groups: []uint32{7, 0}}}, "group 0"},
		{"negative workers", sandbox.Options{Mode: sandbox.ModeThread, Identity: sandbox.Identity{UID: 5, GID: 5}, MaxWorkers: -1}, "negative"},
		{"negative idle", sandbox.Options{Mode: sandbox.ModeThread, Identity: sandbox.Identity{UID: 5, GID: 5}, IdleTimeout: -time.Second}, "negative"},
		{"thread ok", sandbox.Options{Mode: sandbox.ModeThread, Identity: sandbox.Identity{UID: 5, GID: 5}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tn, err := sandbox.NewTenant(tt.opts)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("NewTenant: %v", err)
				}
				tn.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewTenant error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestRunNone(t *testing.T) {
	for _, mode := range []sandbox.Mode{sandbox.ModeNone, sandbox.ModeSuexec} {
		t.Run(string(mode), func(t *testing.T) {
			tn, err := sandbox.NewTenant(sandbox.Options{Mode: mode, Identity: sandbox.Identity{UID: 31001, GID: 31001}})
			if err != nil {
				t.Fatal(err)
			}
			ran := false
			if err := tn.Run(context.Background(), func() { ran = os.Geteuid() == os.Getuid() }); err != nil || !ran {
				t.Fatalf("Run = %v, ran %v", err, ran)
			}
			var pe *sandbox.PanicError
			if err := tn.Run(context.Background(), func() { panic("boom") }); !errors.As(err, &pe) || pe.Value != "boom" {
				t.Fatalf("Run(panic) = %v, want PanicError boom", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := tn.Run(ctx, func() { t.Error("fn ran with a cancelled context") }); !errors.Is(err, context.Canceled) {
				t.Fatalf("Run(cancelled) = %v", err)
			}
			if s := tn.Stats(); s.Runs != 2 || s.Busy != 0 || s.Workers != 0 {
				t.Fatalf("Stats = %+v", s)
			}
			tn.Close()
			if err := tn.Run(context.Background(), func() {}); !errors.Is(err, sandbox.ErrClosed) {
				t.Fatalf("Run after Close = %v", err)
			}
		})
	}
}

// TestIdleTenantsHoldNoThreads: 10,000 idle thread-mode tenants create no
// thread and no goroutine.
func TestIdleTenantsHoldNoThreads(t *testing.T) {
	before, g0 := countThreads(t), runtime.NumGoroutine()
	tenants := make([]*sandbox.Tenant, 0, 10000)
	for i := range 10000 {
		tn, err := sandbox.NewTenant(sandbox.Options{Mode: sandbox.ModeThread, Identity: sandbox.Identity{UID: uint32(40000 + i), GID: uint32(40000 + i)}})
		if err != nil {
			t.Fatal(err)
		}
		tenants = append(tenants, tn)
	}
	after, g1 := countThreads(t), runtime.NumGoroutine()
	if after > before+8 || g1 > g0+8 {
		t.Fatalf("10000 idle tenants: threads %d -> %d, goroutines %d -> %d", before, after, g0, g1)
	}
	for _, tn := range tenants {
		if s := tn.Stats(); s.Workers != 0 {
			t.Fatalf("idle tenant has %d workers", s.Workers)
		}
		tn.Close()
	}
}

func countThreads(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		sandboxtest.Skipf(t, "no /proc: %v", err)
	}
	return len(ents)
}
