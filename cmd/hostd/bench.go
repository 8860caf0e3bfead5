package main

import (
	"fmt"
	"io"
)

// cmdBench runs `hostd bench` (see bench/).
func cmdBench(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "hostd bench: not built yet")
	return 2
}
