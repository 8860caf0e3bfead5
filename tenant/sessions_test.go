package tenant

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSessionsConfig(t *testing.T) {
	const vh = "server_name = \"a.example\"\nroot = \"../public\"\n"
	tests := []struct {
		name        string
		main, vhost string
		want        Sessions // checked when wantErr is ""
		wantErr     string   // substring, with file:line
	}{
		{name: "defaults", want: Sessions{Store: "memory"}},
		{
			name: "main redis",
			main: "[sessions]\nstore = \"redis\"\nurl = \"redis://127.0.0.1:6379/0\"\nttl = \"10m\"\n",
			want: Sessions{Store: "redis", URL: "redis://127.0.0.1:6379/0", TTL: Duration(10 * time.Minute)},
		},
		{
			name:  "vhost overrides keys",
			main:  "[sessions]\nstore = \"redis\"\nurl = \"redis://127.0.0.1:6379/0\"\n",
			vhost: "[sessions]\ncookie = \"sid\"\nmax_bytes = \"8KiB\"\n",
			want:  Sessions{Store: "redis", URL: "redis://127.0.0.1:6379/0", Cookie: "sid", MaxBytes: 8192},
		},
		{
			name:  "vhost changes store",
			main:  "[sessions]\nstore = \"redis\"\nurl = \"redis://127.0.0.1:6379/0\"\n",
			vhost: "[sessions]\nstore = \"memcached\"\nservers = [\"127.0.0.1:11211\"]\nbackup = [\"127.0.0.1:11212\"]\n",
			want:  Sessions{Store: "memcached", Servers: []string{"127.0.0.1:11211"}, Backup: []string{"127.0.0.1:11212"}},
		},
		{name: "bad store", main: "[sessions]\nstore = \"mysql\"\n", wantErr: "hostd.toml:6: sessions.store \"mysql\""},
		{name: "redis without url", main: "[sessions]\nstore = \"redis\"\n", wantErr: "hostd.toml:5: sessions: store = \"redis\" needs url"},
		{name: "memcached without servers", vhost: "[sessions]\nstore = \"memcached\"\n", wantErr: "a.toml:3: sessions: store = \"memcached\" needs servers"},
		{name: "bad url", vhost: "[sessions]\nstore = \"redis\"\nurl = \"http://x\"\n", wantErr: "a.toml:5: sessions.url \"http://x\""},
		{name: "bad server", vhost: "[sessions]\nstore = \"memcached\"\nservers = [\"nohost\"]\n", wantErr: "a.toml:5: sessions.servers: \"nohost\""},
		{name: "bad cookie", vhost: "[sessions]\ncookie = \"a b\"\n", wantErr: "a.toml:4: sessions.cookie"},
		{name: "short ttl", vhost: "[sessions]\nttl = \"10ms\"\n", wantErr: "a.toml:4: sessions.ttl"},
		{name: "huge max_bytes", vhost: "[sessions]\nmax_bytes = \"2MiB\"\n", wantErr: "a.toml:4: sessions.max_bytes"},
		{name: "url with memory", vhost: "[sessions]\nurl = \"redis://127.0.0.1:6379\"\n", wantErr: "a.toml:3: sessions: url, servers and backup need"},
		{name: "unknown key", vhost: "[sessions]\nstor = \"redis\"\n", wantErr: "a.toml:4:1: unknown key \"sessions.stor\" (did you mean \"store\"?)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{
				"hostd.toml":      mainOK + tt.main,
				"vhosts.d/a.toml": vh + tt.vhost,
			})
			cfg, err := Load(filepath.Join(dir, "hostd.toml"))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.VHosts[0].Sessions
			got.line = 0
			if got.Store != tt.want.Store || got.URL != tt.want.URL || got.Cookie != tt.want.Cookie ||
				got.TTL != tt.want.TTL || got.MaxBytes != tt.want.MaxBytes ||
				strings.Join(got.Servers, ",") != strings.Join(tt.want.Servers, ",") ||
				strings.Join(got.Backup, ",") != strings.Join(tt.want.Backup, ",") {
				t.Errorf("sessions = %+v, want %+v", got, tt.want)
			}
		})
	}
}
