package admin

import (
	"encoding/json"
	"html/template"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"
)

// Handler returns the admin listener's routes (admin_listen): metrics at
// /metrics, the status page at /status and its numbers at /status.json
// (what `hostd status --json` prints), Go's profiler under /debug/pprof/
// (`go tool pprof http://ADMIN/debug/pprof/profile?seconds=10`,
// docs/performance.md), and / redirecting to /status. The caller puts it
// behind its bearer-token check; logger (nil: none) gets the page's write
// errors.
func Handler(b Backend, metrics http.Handler, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) { serveStatusPage(w, b, logger) })
	mux.HandleFunc("GET /status.json", func(w http.ResponseWriter, r *http.Request) { serveStatusJSON(w, b, logger) })
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/status", http.StatusFound)
	})
	return mux
}

// statusPage is the admin listener's HTML page (like Apache's mod_status):
// the same numbers as `hostd status` and /metrics.
var statusPage = template.Must(template.New("status").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>hostd status</title>
<style>body{font-family:sans-serif}table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 6px;text-align:right}td:first-child{text-align:left}</style>
</head><body>
<h1>hostd status</h1>
<dl id="server">
<dt>Configuration</dt><dd id="config">{{.ConfigFile}}</dd>
<dt>Generation</dt><dd id="generation">{{.Generation}}</dd>
<dt>Started</dt><dd id="started">{{.Started.UTC.Format "2006-01-02T15:04:05Z"}} (up {{.Uptime}})</dd>
<dt>Threads</dt><dd id="threads">{{.Threads}}</dd>
<dt>TLS handshakes</dt><dd id="handshakes">full {{.Handshakes.Full}}, resumed {{.Handshakes.Resumed}}, failed {{.Handshakes.Failed}}, shed {{.Handshakes.Shed}}</dd>
<dt>Version</dt><dd id="version">{{.Version}}</dd>
<dt>Failed reloads</dt><dd id="reload-failures">{{.Reloads.Failed}}</dd>
<dt>Partial reloads</dt><dd id="reload-partial">{{.Reloads.Partial}}</dd>
<dt>Unknown host names</dt><dd id="unknown-host">{{.Requests.UnknownHost}}</dd>
{{with .Containment}}<dt>CGI and PHP processes</dt><dd id="containment">{{if .PIDNamespace}}each script and pool in its own PID namespace{{else}}without PID namespaces: {{.PIDNamespaceWhyNot}}{{end}}</dd>{{end}}
</dl>
{{if .ConfigErrors}}<h2>Vhost files not applied</h2><ul id="config-errors">{{range $file, $errs := .ConfigErrors}}<li>{{$file}}<ul>{{range $errs}}<li>{{.}}</li>{{end}}</ul></li>{{end}}</ul>{{end}}
<table id="vhosts">
<thead><tr><th>vhost</th><th>sandbox</th><th>requests</th><th>2xx</th><th>3xx</th><th>4xx</th><th>5xx</th><th>active</th><th>bytes</th><th>workers</th><th>busy</th><th>hook errors</th><th>hook timeouts</th><th>CGI spawns</th><th>configuration</th></tr></thead>
<tbody>
{{range $name, $v := .VHosts}}<tr data-vhost="{{$name}}"><td>{{$name}}</td><td>{{$v.Mode}}</td><td class="requests">{{$v.Requests}}</td><td>{{index $v.ByClass "2xx"}}</td><td>{{index $v.ByClass "3xx"}}</td><td>{{index $v.ByClass "4xx"}}</td><td class="errors">{{index $v.ByClass "5xx"}}</td><td>{{$v.Active}}</td><td class="bytes">{{$v.Bytes}}</td><td>{{$v.Workers}}</td><td>{{$v.Busy}}</td><td>{{$v.HookErrors}}</td><td>{{$v.HookTimeouts}}</td><td>{{$v.CGISpawns}}</td><td class="config">{{if $v.ConfigErrors}}previous version kept: {{range $v.ConfigErrors}}{{.}} {{end}}{{end}}</td></tr>
{{end}}</tbody></table>
</body></html>
`))

type statusView struct {
	Status
	Uptime time.Duration
}

func serveStatusPage(w http.ResponseWriter, b Backend, logger *slog.Logger) {
	st := b.Status()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := statusPage.Execute(w, statusView{Status: st, Uptime: time.Since(st.Started).Round(time.Second)}); err != nil {
		logger.Warn("status page", "err", err)
	}
}

// serveStatusJSON serves what `hostd status --json` prints.
func serveStatusJSON(w http.ResponseWriter, b Backend, logger *slog.Logger) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(b.Status()); err != nil {
		logger.Warn("status.json", "err", err)
	}
}
