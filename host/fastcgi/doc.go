// Package fastcgi is a FastCGI client for the responder role (the FastCGI
// 1.0 record protocol), used by hostd to talk to php-fpm pools. net/http/fcgi
// is server-side only and the module proxy serves no maintained client.
//
// A Client keeps a bounded set of connections to one application
// (FCGI_KEEP_CONN; Config.OneShot opens one per request), streams the request body as FCGI_STDIN while the
// response is being read, hands FCGI_STDERR to the caller as it arrives, and
// bounds every request by its context. It knows nothing of HTTP: the caller
// builds the CGI parameters and parses the response's header block.
package fastcgi
