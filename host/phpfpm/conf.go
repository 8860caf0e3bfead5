package phpfpm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// poolFile returns the php-fpm configuration of the pool: one global
// section and one pool.
//
// The master runs as the tenant, so php-fpm's user and group directives
// (which only a root master applies) are not written: the pool's
// identity is the one the spawner gave the master.
func (p *Pool) poolFile() string {
	c := &p.cfg
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("; written by hostd for vhost %s; regenerated on every start", c.Name)
	line("[global]")
	line("error_log = /dev/null") // --force-stderr: the log goes to hostd
	line("log_level = warning")
	line("daemonize = no")
	line("systemd_interval = 0")
	line("process_control_timeout = 5s")
	line("")
	line("[%s]", poolName(c.Name))
	line("listen = %s", p.sock) // inherited from hostd (FPM_SOCKETS)
	line("pm = ondemand")
	line("pm.max_children = %d", c.Workers)
	line("pm.process_idle_timeout = %ds", max(int(c.IdleTimeout.Seconds()), 1))
	line("pm.max_requests = %d", max(c.MaxRequests, 0))
	line("request_terminate_timeout = %ds", max(int(c.Timeout.Seconds()), 1))
	line("chdir = %s", c.Root)
	line("clear_env = yes")
	line("env[PATH] = /usr/local/bin:/usr/bin:/bin")
	line("env[TMPDIR] = %s", c.TmpDir)
	// PHP's messages reach hostd over FastCGI with the request they
	// belong to; the copy workers write to their stderr is not wanted.
	line("catch_workers_output = no")
	line("security.limit_extensions = %s", strings.Join(c.Extensions, " "))
	// Without error_log, PHP sends its messages to hostd over FastCGI
	// (FCGI_STDERR), and hostd writes them to the tenant's error log.
	settings := map[string]string{
		"open_basedir":       strings.TrimSuffix(c.Root, "/") + "/:" + strings.TrimSuffix(c.TmpDir, "/") + "/",
		"upload_tmp_dir":     c.TmpDir,
		"sys_temp_dir":       c.TmpDir,
		"session.save_path":  c.TmpDir,
		"expose_php":         "off",
		"log_errors":         "on",
		"display_errors":     "off",
		"html_errors":        "off",
		"max_execution_time": fmt.Sprint(max(int(c.Timeout.Seconds()), 1)),
	}
	maps.Copy(settings, c.Settings)
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		v := settings[k]
		switch {
		case v == "on" || v == "off":
			line("php_admin_flag[%s] = %s", k, v)
		default:
			line("php_admin_value[%s] = %s", k, quote(v))
		}
	}
	return b.String()
}

// poolName makes a server name a php-fpm pool name (a section header).
func poolName(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, name)
}

// quote quotes a value for php-fpm's ini parser when it needs it (tenant
// paths with spaces, values with ';' or '='). tenant.Load refuses values
// with '"' or newlines.
func quote(v string) string {
	if v == "" || strings.ContainsAny(v, " ;=#&|^~!()[]{}$'\\") {
		return `"` + v + `"`
	}
	return v
}
