package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hostd/hostd/tenant"
)

// cmdGenVHosts writes a main file and N vhost files sharing one document
// root, for scale measurements (docs/operations.md); optionally each with
// its own tenant uid, sandbox mode and hook.
func cmdGenVHosts(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hostd gen-vhosts", flag.ContinueOnError)
	out := fs.String("out", "", "output `dir` (created)")
	count := fs.Int("count", 1000, "number of vhosts")
	listen := fs.String("listen", "127.0.0.1:8443", "listen_https")
	admin := fs.String("admin-listen", "", "admin_listen (metrics); \"\" = off")
	var o genOptions
	fs.StringVar(&o.sandbox, "sandbox", "", "sandbox mode of every vhost (e.g. uring, thread); \"\" leaves it to default_sandbox")
	fs.IntVar(&o.uidBase, "uid-base", 0, "give vhost i the tenant uid BASE+i (numeric, no passwd entry); 0 = no user")
	fs.BoolVar(&o.hooks, "hooks", false, "give every vhost its own content hook at /hook, Lua and mruby alternately")
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	if *out == "" || *count < 1 {
		fmt.Fprintln(stderr, "hostd gen-vhosts: --out DIR and --count N >= 1 are required")
		return 2
	}
	if o.sandbox != "" && o.sandbox != "none" && o.uidBase == 0 {
		fmt.Fprintln(stderr, "hostd gen-vhosts: --sandbox needs --uid-base")
		return 2
	}
	if err := genVHosts(*out, *count, *listen, *admin, o); err != nil {
		fmt.Fprintln(stderr, "hostd gen-vhosts:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %d vhosts (v00000.test ... v%05d.test)\n", filepath.Join(*out, "hostd.toml"), *count, *count-1)
	return 0
}

// genOptions are gen-vhosts' optional per-tenant settings.
type genOptions struct {
	sandbox string
	uidBase int
	hooks   bool
}

// genVHosts writes dir/hostd.toml, dir/vhosts.d/vNNNNN.toml and a shared
// dir/www root with a 1 KiB index.html; with o.hooks also
// dir/hooks/vNNNNN.lua or .rb.
func genVHosts(dir string, n int, listen, admin string, o genOptions) error {
	for _, d := range []string{"vhosts.d", "www", "hooks"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	body := make([]byte, 1024)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	if err := os.WriteFile(filepath.Join(dir, "www", "index.html"), body, 0o644); err != nil {
		return err
	}
	main := tenant.MainFile{Server: tenant.Server{ListenHTTPS: listen, VHosts: "vhosts.d/*.toml", AdminListen: admin}}
	if err := tenant.WriteFile(filepath.Join(dir, "hostd.toml"), main); err != nil {
		return err
	}
	if fi, err := os.Stat(dir); err != nil {
		return err
	} else if fi.Mode().Perm()&0o001 == 0 { // tenants traverse it (a fresh MkdirAll/MkdirTemp dir may be 0700)
		if err := os.Chmod(dir, fi.Mode()&(os.ModePerm|os.ModeSticky|os.ModeSetuid|os.ModeSetgid)|0o111); err != nil {
			return err
		}
	}
	for i := range n {
		name := fmt.Sprintf("v%05d", i)
		vf := tenant.VHost{ServerName: name + ".test", Aliases: []string{"www." + name + ".test"}, Root: "../www", Sandbox: o.sandbox}
		if o.uidBase > 0 {
			vf.User = strconv.Itoa(o.uidBase + i)
		}
		if o.hooks {
			hook, src := name+".lua", "r.headers_out[\"Content-Type\"] = \"text/plain\"\nr:write(\"hello from "+name+"\\n\")\n"
			if i%2 == 1 {
				hook, src = name+".rb", "r.headers_out[\"Content-Type\"] = \"text/plain\"\nr.write(\"hello from "+name+"\\n\")\n"
			}
			if err := os.WriteFile(filepath.Join(dir, "hooks", hook), []byte(src), 0o644); err != nil {
				return err
			}
			vf.Hooks = []tenant.Hook{{Phase: "content", File: "../hooks/" + hook, Path: "/hook"}}
		}
		if err := tenant.WriteFile(filepath.Join(dir, "vhosts.d", name+".toml"), &vf); err != nil {
			return err
		}
	}
	return nil
}

func printJSON(w io.Writer, v any) {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	e.Encode(v)
}
