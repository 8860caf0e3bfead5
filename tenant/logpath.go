package tenant

import (
	"os"

	"github.com/hostd/hostd/sandbox"
)

// LogPolicy returns the rules the server's log files and their directories
// must follow (sandbox.LogPolicy): owned by root, the server's own uid or
// server.user, and not writable by any group from min_uid up.
func (c *Config) LogPolicy() sandbox.LogPolicy {
	p := sandbox.LogPolicy{TenantMinID: uint32(c.MinUID())}
	if euid := os.Geteuid(); euid > 0 {
		p.Owners = append(p.Owners, uint32(euid))
	}
	if c.HasServerUser {
		p.Owners = append(p.Owners, c.ServerUID)
	}
	return p
}

// LogGroup returns the group the vhost's own log files get, so that the
// tenant can read them: its gid, or -1 (leave the group) without a user.
func (v *VHost) LogGroup() int {
	if v.User == "" {
		return -1
	}
	return int(v.GID)
}

// checkLogPath reports a log path that sandbox.CheckLogPath refuses (a
// directory a tenant can write, a symbolic link, ...) at file:line.
func (l *loader) checkLogPath(cfg *Config, file string, line int, key, path string) {
	if path == "" || path == "-" {
		return
	}
	if err := sandbox.CheckLogPath(path, cfg.LogPolicy()); err != nil {
		l.add(file, line, "%s %s: %v", key, path, err)
	}
}
