//go:build cgo && !nomruby

package mruby

/*
#include <stdint.h>
#include <stddef.h>
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

// Results of hostdReMatch besides a count of offsets.
const (
	reFastNoMatch = -1 // no match at or after pos
	reFastSlow    = -2 // take the general path (Hostd.__fn "re_match"), which reports the error
)

// hostdReMatch is Regexp#match's fast path (the C side is "Regexp fast
// path" in hostd_mruby.c): the pattern (src, flags) from the VM's cache
// and the subject, read in place from mruby's memory; no encoding of
// arguments or results, one cgo call. It writes the byte offsets of the
// first match at or after byte pos (-1 for a group that did not take part)
// to offs and returns how many, reFastNoMatch, or reFastSlow for anything
// that is an error (bad pattern, input or work limit, the run ended) or
// has more groups than offs holds: fnReMatch then does the same match
// through Hostd.__fn and raises the same error as before. Nothing here
// keeps the C strings: the cache copies a key it stores.
//
//export hostdReMatch
func hostdReMatch(h C.uintptr_t, src *C.char, srcLen C.size_t, flags *C.char, flagsLen C.size_t,
	subj *C.char, subjLen C.size_t, pos C.int64_t, offs *C.int64_t, capOffs C.int) (n C.int) {
	defer func() {
		if recover() != nil {
			n = reFastSlow
		}
	}()
	rs, ok := cgo.Handle(h).Value().(*runState)
	if !ok || rs.ctx.Err() != nil || int(subjLen) > rs.e.cfg.Limits.MaxInput {
		return reFastSlow
	}
	re, err := rs.re.Compile(cString(src, srcLen), cString(flags, flagsLen))
	if err != nil {
		return reFastSlow
	}
	s := cString(subj, subjLen)
	if re.CheckInput(s) != nil || 2*(re.NumSubexp()+1) > int(capOffs) {
		return reFastSlow
	}
	p := int(pos)
	if p < 0 {
		p += len(s)
	}
	if p < 0 || p > len(s) {
		return reFastNoMatch
	}
	m := re.FindStringSubmatchIndex(s[p:])
	if m == nil {
		return reFastNoMatch
	}
	out := unsafe.Slice((*int64)(unsafe.Pointer(offs)), len(m))
	for i, x := range m {
		if x >= 0 {
			x += p
		}
		out[i] = int64(x)
	}
	return C.int(len(m))
}

// cString is the n bytes at p as a string without a copy: valid only
// during the call that passed them.
func cString(p *C.char, n C.size_t) string {
	if n == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Pointer(p)), int(n))
}
