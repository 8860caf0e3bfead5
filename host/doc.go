// Package host serves a tenant.Config: it owns the listeners, TLS (SNI
// certificate selection, session tickets, HTTP/2), routing of each request
// to its virtual host, the static file, CGI and hook handlers, and the
// access log. The request path is one pipeline of small stages composed in
// order in pipeline.go; what does not need the Server lives in packages of
// its own (host/admission, host/tickets). It calls down into sandbox (run this as tenant X) and
// scripting (run this hook on this request); neither knows about HTTP.
package host
