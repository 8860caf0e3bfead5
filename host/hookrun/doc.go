// Package hookrun runs one hook once against a synthetic request, outside
// a server, and compiles hooks for checks: the logic of `hostd hook run`
// and `hostd hook check` (like OpenResty's resty). With a vhost file it
// uses that vhost's limits, file gate roots and outbound list and, when
// the process is root, the tenant's identity (taken only from a vhost
// file that root or that tenant owns).
package hookrun
