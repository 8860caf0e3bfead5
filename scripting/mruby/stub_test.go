//go:build nomruby || !cgo

package mruby

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/scriptingtest"
)

func TestStubNotSupported(t *testing.T) {
	e := New(scripting.Config{})
	defer e.Close()
	_, err := e.Run(context.Background(), scripting.PhaseContent, "/x.rb", scriptingtest.NewRequest(scriptingtest.RequestOptions{}))
	if !errors.Is(err, scripting.ErrNotSupported) || !strings.Contains(err.Error(), "built without mruby") {
		t.Errorf("Run: %v", err)
	}
	if err := e.Check("/x.rb"); !errors.Is(err, scripting.ErrNotSupported) {
		t.Errorf("Check: %v", err)
	}
	if Available {
		t.Error("Available is true in a build without mruby")
	}
}
