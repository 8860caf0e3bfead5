package cgi

import (
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
)

// EnvConfig is the server side of a script's environment: what Env needs
// besides the request and the script.
type EnvConfig struct {
	// Root is DOCUMENT_ROOT and the base of PATH_TRANSLATED.
	Root string
	// ServerName is SERVER_NAME; "" means the request's Host without port.
	ServerName string
	// PassAuthorization passes the Authorization header as
	// HTTP_AUTHORIZATION.
	PassAuthorization bool
}

func (h *Handler) env(r *http.Request, s Script, contentLength int64) []string {
	return Env(r, s, contentLength, EnvConfig{Root: h.root, ServerName: h.serverName, PassAuthorization: h.passAuth})
}

// Env builds the complete environment of a script run from scratch, as
// "NAME=value" strings: the RFC 3875 meta-variables, DOCUMENT_ROOT,
// REQUEST_URI, HTTPS, REDIRECT_STATUS (so php-cgi with cgi.force_redirect
// runs), the request headers as HTTP_* (never HTTP_PROXY), and a fixed PATH.
// Nothing of the server's own environment is passed. contentLength is the
// number of body bytes the script gets (-1: no body). The CGI handler and
// the FastCGI (PHP) handler both use it, so scripts see the same variables
// either way.
func Env(r *http.Request, s Script, contentLength int64, c EnvConfig) []string {
	env := make([]string, 0, 32+len(r.Header))
	add := func(k, v string) { env = append(env, k+"="+v) }

	add("GATEWAY_INTERFACE", "CGI/1.1")
	add("SERVER_SOFTWARE", "hostd")
	add("SERVER_PROTOCOL", r.Proto)
	add("REQUEST_METHOD", r.Method)
	add("REQUEST_URI", r.RequestURI)
	add("QUERY_STRING", r.URL.RawQuery)
	add("SCRIPT_NAME", s.Name)
	add("SCRIPT_FILENAME", s.Filename)
	add("DOCUMENT_ROOT", c.Root)
	add("PATH_INFO", s.PathInfo)
	if s.PathInfo != "" {
		// PATH_TRANSLATED maps PATH_INFO as a document path; Resolve
		// refused dot segments, so it stays under the root.
		add("PATH_TRANSLATED", filepath.Join(c.Root, filepath.FromSlash(s.PathInfo)))
	}
	add("REDIRECT_STATUS", "200")
	add("PATH", DefaultPath)

	// The server side.
	host := c.ServerName
	if host == "" {
		host = r.Host
		if hn, _, err := net.SplitHostPort(host); err == nil {
			host = hn
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	add("SERVER_NAME", host)
	port := ""
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if addr, p, err := net.SplitHostPort(la.String()); err == nil {
			add("SERVER_ADDR", addr)
			port = p
		}
	}
	if port == "" {
		if _, p, err := net.SplitHostPort(r.Host); err == nil {
			port = p
		} else if r.TLS != nil {
			port = "443"
		} else {
			port = "80"
		}
	}
	add("SERVER_PORT", port)
	if r.TLS != nil {
		add("HTTPS", "on")
		add("REQUEST_SCHEME", "https")
	} else {
		add("REQUEST_SCHEME", "http")
	}

	// The client side. No reverse DNS: REMOTE_HOST is the address.
	if ra, rp, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		add("REMOTE_ADDR", ra)
		add("REMOTE_HOST", ra)
		add("REMOTE_PORT", rp)
	} else {
		add("REMOTE_ADDR", r.RemoteAddr)
		add("REMOTE_HOST", r.RemoteAddr)
	}

	// The body.
	if contentLength >= 0 {
		add("CONTENT_LENGTH", strconv.FormatInt(contentLength, 10))
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		add("CONTENT_TYPE", ct)
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, _, _ := strings.Cut(auth, " ")
		add("AUTH_TYPE", scheme)
	}

	// Request headers. Go keeps Host out of r.Header.
	if r.Host != "" {
		add("HTTP_HOST", r.Host)
	}
	for k, vv := range r.Header {
		name, ok := headerEnvName(k)
		if !ok {
			continue
		}
		switch name {
		case "HTTP_PROXY": // httpoxy: the client must not set the script's proxy
			continue
		case "HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH", "HTTP_HOST":
			continue // meta-variables of their own
		case "HTTP_AUTHORIZATION":
			if !c.PassAuthorization {
				continue
			}
		}
		sep := ", "
		if name == "HTTP_COOKIE" {
			sep = "; "
		}
		add(name, strings.Join(vv, sep))
	}
	return env
}

// headerEnvName returns HTTP_NAME for a header name made only of letters,
// digits and '-'. Other names are dropped: a header "X_Foo" would otherwise
// pose as "X-Foo" (both become HTTP_X_FOO).
func headerEnvName(k string) (string, bool) {
	if k == "" {
		return "", false
	}
	b := make([]byte, 0, 5+len(k))
	b = append(b, "HTTP_"...)
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case 'a' <= c && c <= 'z':
			b = append(b, c-'a'+'A')
		case 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			b = append(b, c)
		case c == '-':
			b = append(b, '_')
		default:
			return "", false
		}
	}
	return string(b), true
}
