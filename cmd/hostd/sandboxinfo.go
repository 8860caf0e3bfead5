package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/tenant"
)

// modeLabel is a vhost's sandbox mode as check prints it: "auto:uring"
// when "auto" chose it.
func modeLabel(v *tenant.VHost) string {
	if v.AutoSandbox {
		return "auto:" + v.Mode
	}
	return v.Mode
}

// sandboxReport says which sandbox modes work on this machine for this
// process, and why the others do not.
func sandboxReport() []string {
	sw := "usable"
	if err := sandbox.CanSwitch(); err != nil {
		sw = "not usable: " + strings.TrimPrefix(err.Error(), "sandbox: ")
	}
	uring := sw
	uringErr := sandbox.ProbeURing()
	if uringErr != nil {
		uring = "not usable: " + strings.TrimPrefix(uringErr.Error(), "sandbox: ")
	}
	auto := "uring"
	if uringErr != nil {
		auto = "thread (io_uring is not usable)"
	}
	return []string{
		"sandbox none, suexec: usable",
		"sandbox thread, thread-per-request, inline: " + sw,
		"sandbox uring: " + uring,
		"sandbox auto: chooses " + auto,
	}
}

// printSandboxReport prints sandboxReport, one line each.
func printSandboxReport(w io.Writer) {
	for _, l := range sandboxReport() {
		fmt.Fprintln(w, l)
	}
}

// logSandbox logs, at start, what "auto" chose and why.
func logSandbox(cfg *tenant.Config, logger *slog.Logger) {
	n := map[string]int{}
	for _, v := range cfg.VHosts {
		if v.AutoSandbox {
			n[v.Mode]++
		}
	}
	if len(n) == 0 {
		return
	}
	if err := sandbox.ProbeURing(); err != nil {
		logger.Warn("sandbox auto: io_uring is not usable, tenants run in mode thread", "vhosts", n["thread"], "reason", err.Error())
		return
	}
	logger.Info("sandbox auto: mode uring (kernel-checked file gate per operation)", "vhosts", n["uring"])
}
