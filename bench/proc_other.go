//go:build !linux

package bench

import "os/exec"

func setDeathSignal(*exec.Cmd) {}

func splitCPUs() (server, load []int) { return nil, nil }

func startPinned(cmd *exec.Cmd, _ []int) error { return cmd.Start() }

func sysInfo() (cpuModel, kernel string) { return "", "" }

func cpuBusy([]int) (int64, bool) { return 0, false }
