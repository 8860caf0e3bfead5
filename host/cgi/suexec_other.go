//go:build !linux

package cgi

import "net/http"

// check refuses every script: the spawner and the ownership checks need
// Linux.
func (h *Handler) check(s Script) *refusal {
	return &refusal{status: http.StatusInternalServerError, reason: "cgi scripts need linux"}
}
