//go:build !linux

package sandbox_test

const helperEnv = "HOSTD_SANDBOX_TEST_HELPER"

func runHelper(string) int { return 2 }
