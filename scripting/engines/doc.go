// Package engines lists the hook languages built into hostd: the one
// place that names them. host picks a hook's engine and tenant checks a
// hook's extension through Builtin.
package engines
