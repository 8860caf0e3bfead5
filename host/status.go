package host

import (
	"html/template"
	"net/http"
	"time"
)

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
<dt>Failed reloads</dt><dd id="reload-failures">{{.Reloads.Failed}}</dd>
</dl>
<table id="vhosts">
<thead><tr><th>vhost</th><th>sandbox</th><th>requests</th><th>2xx</th><th>3xx</th><th>4xx</th><th>5xx</th><th>active</th><th>bytes</th><th>workers</th><th>busy</th><th>hook errors</th><th>hook timeouts</th><th>CGI spawns</th></tr></thead>
<tbody>
{{range .VHosts}}<tr data-vhost="{{.Name}}"><td>{{.Name}}</td><td>{{.Mode}}</td><td class="requests">{{.Requests}}</td><td>{{index .ByClass 2}}</td><td>{{index .ByClass 3}}</td><td>{{index .ByClass 4}}</td><td class="errors">{{index .ByClass 5}}</td><td>{{.Active}}</td><td class="bytes">{{.Bytes}}</td><td>{{.Workers}}</td><td>{{.Busy}}</td><td>{{.HookErrors}}</td><td>{{.HookTimeouts}}</td><td>{{.CGISpawns}}</td></tr>
{{end}}</tbody></table>
</body></html>
`))

type statusView struct {
	Status
	Uptime time.Duration
}

func (s *Server) serveStatusPage(w http.ResponseWriter, r *http.Request) {
	st := s.Status()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := statusPage.Execute(w, statusView{Status: st, Uptime: time.Since(st.Started).Round(time.Second)}); err != nil {
		s.logger.Warn("status page", "err", err)
	}
}
