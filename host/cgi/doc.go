// Package cgi runs RFC 3875 CGI scripts of a virtual host, with the
// tenant's credentials when the vhost's sandbox mode switches identities.
// net/http/cgi cannot set credentials, so this package resolves the script
// and PATH_INFO under the vhost root, enforces suEXEC-style ownership and
// permission checks, builds the meta-variables from scratch (no server
// environment reaches the child), starts the script through a
// sandbox.Spawner, and turns its output into the HTTP response.
//
// It sits below package host: host does routing and calls a Handler once a
// request maps to a CGI script; this package knows nothing of TOML.
package cgi
