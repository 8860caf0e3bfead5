package tenant

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hostd/hostd/host/phpfpm"
)

// The [php] table's own default (its other keys take phpfpm.Default*,
// the pool's options, in setDefaults) and limits.
const (
	// DefaultPHPFPM is the php-fpm binary of Debian 12's php8.2-fpm package.
	DefaultPHPFPM = "/usr/sbin/php-fpm8.2"
	// PHPFPMPackage is the Debian package that provides DefaultPHPFPM.
	PHPFPMPackage           = "php8.2-fpm"
	maxPHPWorkers           = 1024
	phpINIKeyChars          = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_."
	phpINIForbiddenInValues = "\x00\r\n\""
)

// PHP is a vhost's [php] table: PHP scripts served over FastCGI by a
// php-fpm pool that hostd starts, as the tenant, on the first request.
type PHP struct {
	Enabled bool `toml:"enabled,omitempty"`
	// Extensions are the script extensions the pool runs (default
	// [".php"]); php-fpm's security.limit_extensions is set to them.
	Extensions []string `toml:"extensions,omitempty"`
	// Workers is the most PHP processes of the tenant at once
	// (pm.max_children, default 4).
	Workers int `toml:"workers,omitzero"`
	// MaxRequests is how many requests a PHP process serves before it is
	// replaced (pm.max_requests, default 500; -1 = never).
	MaxRequests int `toml:"max_requests,omitzero"`
	// IdleTimeout is how long an idle PHP process lives
	// (pm.process_idle_timeout of pm = ondemand, default 10s).
	IdleTimeout Duration `toml:"idle_timeout,omitzero"`
	// PoolIdle is how long the pool's php-fpm master lives without a
	// request before hostd stops it (default 10m); the next request starts
	// it again.
	PoolIdle Duration `toml:"pool_idle,omitzero"`
	// Timeout bounds one PHP request, from connect to the end of the
	// response (default 30s); php-fpm's request_terminate_timeout too.
	Timeout Duration `toml:"timeout,omitzero"`
	// TmpDir is the pool's upload_tmp_dir, sys_temp_dir and
	// session.save_path, and part of open_basedir (default "/tmp").
	TmpDir string `toml:"tmp_dir,omitempty"`
	// FPM is the php-fpm binary (default /usr/sbin/php-fpm8.2).
	FPM string `toml:"fpm,omitempty"`
	// INI are php.ini settings for the pool, written as php_admin_value
	// (strings and numbers) or php_admin_flag (booleans), which scripts
	// cannot change.
	INI map[string]any `toml:"ini,omitempty"`

	// Settings is INI after Load: name -> value as php-fpm's pool file
	// takes it ("on"/"off" for booleans), sorted on output by the pool.
	Settings map[string]string `toml:"-"`
}

// checkPHP validates the [php] table of v (after setDefaults).
func (l *loader) checkPHP(cfg *Config, file string, loc *locator, v *VHost) {
	p := &v.PHP
	line := func(key string) int { return nonzero(loc.line("php", -1, key), loc.line("php", -1, "")) }
	for _, e := range p.Extensions {
		if len(e) < 2 || e[0] != '.' || strings.ContainsAny(e[1:], "./\\ \x00") {
			l.add(file, line("extensions"), "php extension %q: want a dot and a name, e.g. \".php\"", e)
		}
		if _, ok := v.CGI.Interpreters[e]; ok && v.CGI.Enabled && p.Enabled {
			l.add(file, line("extensions"), "extension %q is served by both [cgi] interpreters and [php]: remove it from one", e)
		}
		if slices.Contains(v.CGI.Extensions, e) && v.CGI.Enabled && p.Enabled {
			l.add(file, line("extensions"), "extension %q is served by both [cgi] extensions and [php]: remove it from one", e)
		}
	}
	if p.Workers < 0 || p.Workers > maxPHPWorkers {
		l.add(file, line("workers"), "php workers %d: want 1 to %d (0 = default %d)", p.Workers, maxPHPWorkers, phpfpm.DefaultWorkers)
	}
	if p.MaxRequests < -1 {
		l.add(file, line("max_requests"), "php max_requests must be positive, 0 (default %d) or -1 (never recycle)", phpfpm.DefaultMaxRequests)
	}
	if p.IdleTimeout.Std() < time.Second {
		l.add(file, line("idle_timeout"), "php idle_timeout must be at least 1s (php-fpm counts seconds)")
	}
	if p.Timeout.Std() < time.Second {
		l.add(file, line("timeout"), "php timeout must be at least 1s (php-fpm counts seconds)")
	}
	p.TmpDir = rel(filepath.Dir(file), p.TmpDir)
	if !filepath.IsAbs(p.FPM) {
		l.add(file, line("fpm"), "php fpm %q must be an absolute path (default %s)", p.FPM, DefaultPHPFPM)
	}
	p.Settings = make(map[string]string, len(p.INI))
	keys := make([]string, 0, len(p.INI))
	for k := range p.INI {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		val, err := phpINIValue(k, p.INI[k])
		if err != nil {
			l.add(file, line("ini"), "php ini: %v", err)
			continue
		}
		p.Settings[k] = val
	}
	if !p.Enabled {
		return
	}
	// The pool runs as the tenant in every sandbox mode: it needs one.
	switch {
	case v.User == "":
		l.add(file, line("enabled"), "[php] needs user: the tenant's php-fpm pool runs as that user (set user = \"name\" or a numeric uid)")
	case v.UID == 0 || v.GID == 0:
		l.add(file, line("enabled"), "[php] refuses uid/gid 0: a tenant's PHP must not run as root")
	case int64(v.UID) < cfg.MinUID():
		l.add(file, line("enabled"), "[php]: uid %d is below server.min_uid %d", v.UID, cfg.MinUID())
	}
	if filepath.IsAbs(p.FPM) {
		if fi, err := os.Stat(p.FPM); err != nil {
			l.add(file, line("enabled"), "[php] needs php-fpm: %s: %v (install the Debian package %s: apt-get install %s)", p.FPM, unwrapPath(err), PHPFPMPackage, PHPFPMPackage)
		} else if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			l.add(file, line("fpm"), "php fpm %s is not an executable file", p.FPM)
		}
	}
	if fi, err := os.Stat(p.TmpDir); err != nil {
		l.add(file, line("tmp_dir"), "php tmp_dir %s: %v", p.TmpDir, unwrapPath(err))
	} else if !fi.IsDir() {
		l.add(file, line("tmp_dir"), "php tmp_dir %s is not a directory", p.TmpDir)
	}
}

// phpINIValue checks one ini setting and formats its value for a php-fpm
// pool file.
func phpINIValue(k string, v any) (string, error) {
	if k == "" || strings.Trim(k, phpINIKeyChars) != "" {
		return "", fmt.Errorf("setting name %q: want letters, digits, '_' and '.'", k)
	}
	switch x := v.(type) {
	case bool:
		if x {
			return "on", nil
		}
		return "off", nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return "", fmt.Errorf("%s: not a number", k)
		}
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case string:
		if strings.ContainsAny(x, phpINIForbiddenInValues) {
			return "", fmt.Errorf("%s: the value must not contain a newline, NUL or '\"'", k)
		}
		return x, nil
	}
	return "", fmt.Errorf("%s: want a string, number or boolean, not %T", k, v)
}
