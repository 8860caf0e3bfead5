//go:build cgo && !nomruby

package mruby

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/scriptingtest"
)

// The hostile-input tests (fuzzing, every class's allocate) run hooks in a
// child process: the test binary started again with childEnv set, reading
// hook sources from stdin and running each on a real engine. A crash in
// libmruby (SIGSEGV), or a C call that overruns its time limit, is then
// reported with the input that caused it instead of killing the tests.

const childEnv = "HOSTD_MRUBY_CHILD"

// failFromPrefix starts a source line that makes the child refuse every
// allocation of that run from the given one on (Engine.failFrom).
const failFromPrefix = "#hostd-fail-from="

// Limits of the child's engine: a hook's time and memory limits, and how
// long the parent waits for one answer before it calls the run a hang
// (far above childTimeout, for a loaded machine).
const (
	childTimeout = 500 * time.Millisecond
	childMemory  = 32 << 20
	childHang    = 30 * time.Second
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(childMain(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// childMain runs each hook source read from in (frames: 4-byte length,
// bytes) on one engine with one VM, so runs share the mrb_state as pooled
// runs do, and answers each with a frame describing the result.
func childMain(in io.Reader, out io.Writer) int {
	dir, err := os.MkdirTemp("", "hostd-mruby-child-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	e := New(scripting.Config{
		Limits:  scripting.Limits{Timeout: childTimeout, MaxMemory: childMemory},
		MaxVMs:  1,
		HookDir: dir,
		FS:      scriptingtest.RootFS(),
	})
	defer e.Close()
	r := bufio.NewReader(in)
	w := bufio.NewWriter(out)
	for n := 0; ; n++ {
		src, err := readFrame(r)
		if err != nil {
			return 0 // the parent closed stdin
		}
		// A new file per input: the script cache keys by path and version.
		path := filepath.Join(dir, fmt.Sprintf("hook%d.rb", n))
		if err := os.WriteFile(path, src, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		// A source starting with failFromPrefix+N+"\n" runs with every
		// allocation from its N-th on refused (failing memory).
		if rest, ok := bytes.CutPrefix(src, []byte(failFromPrefix)); ok {
			if i := bytes.IndexByte(rest, '\n'); i > 0 {
				if n, err := strconv.Atoi(string(rest[:i])); err == nil {
					e.failFrom.Store(int64(n))
				}
			}
		}
		req := scriptingtest.NewRequest(scriptingtest.RequestOptions{ResponseLimit: 1 << 20})
		res, err := e.Run(context.Background(), scripting.PhaseContent, path, req)
		os.Remove(path)
		answer := fmt.Sprintf("status=%d body=%q", res.Status, req.Response())
		if err != nil {
			answer += " err=" + err.Error()
		}
		if err := writeFrame(w, []byte(answer)); err != nil {
			return 1
		}
		if err := w.Flush(); err != nil {
			return 1
		}
	}
}

func readFrame(r io.Reader) ([]byte, error) {
	var n uint32
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
		return nil, err
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

func writeFrame(w io.Writer, b []byte) error {
	if err := binary.Write(w, binary.LittleEndian, uint32(len(b))); err != nil {
		return err
	}
	_, err := w.Write(b)
	return err
}

// child is a running child process; one goroutine uses it at a time.
type child struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *bytes.Buffer
}

// errChildDied and errChildHung are what child.run reports besides I/O
// errors.
var (
	errChildDied = errors.New("the child process died")
	errChildHung = errors.New("the child process did not answer in time")
)

func startChild(tb testing.TB) *child {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	c := &child{cmd: cmd, in: in, out: bufio.NewReader(out), stderr: new(bytes.Buffer)}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	return c
}

// run sends src and returns the child's answer. After an error the child
// is gone (killed when it hung) and must not be used again.
func (c *child) run(src string) (string, error) {
	if err := writeFrame(c.in, []byte(src)); err != nil {
		return "", c.died(err)
	}
	type reply struct {
		b   []byte
		err error
	}
	done := make(chan reply, 1)
	go func() {
		b, err := readFrame(c.out)
		done <- reply{b, err}
	}()
	timer := time.NewTimer(childHang)
	defer timer.Stop()
	select {
	case rep := <-done:
		if rep.err != nil {
			return "", c.died(rep.err)
		}
		return string(rep.b), nil
	case <-timer.C:
		c.cmd.Process.Kill()
		c.cmd.Wait()
		return "", fmt.Errorf("%w (%v)", errChildHung, childHang)
	}
}

// died waits for the child and describes how it ended.
func (c *child) died(err error) error {
	c.in.Close()
	werr := c.cmd.Wait()
	tail := c.stderr.Bytes()
	if len(tail) > 4096 {
		tail = tail[:4096]
	}
	return fmt.Errorf("%w: %v (%v); its stderr:\n%s", errChildDied, werr, err, tail)
}

// close ends a healthy child.
func (c *child) close() {
	c.in.Close()
	c.cmd.Wait()
}
