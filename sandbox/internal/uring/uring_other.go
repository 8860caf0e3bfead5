//go:build !linux

package uring

import "errors"

// ErrUnsupported is returned on systems without io_uring.
var ErrUnsupported = errors.New("uring: io_uring needs linux")
