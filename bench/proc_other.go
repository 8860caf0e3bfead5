//go:build !linux

package bench

import "os/exec"

func setDeathSignal(*exec.Cmd) {}

func splitCPUs() (server, load []int) { return nil, nil }

func pinProcess([]int) (func(), error) { return func() {}, nil }

func startPinned(cmd *exec.Cmd, _ []int) error { return cmd.Start() }

func cpuTime(int) (int64, bool) { return 0, false }

const ticksPerSecond = 100

func sysInfo() (cpuModel, kernel string) { return "", "" }

func cpuBusy([]int) (int64, bool) { return 0, false }
