package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// cmdGenVHosts writes a main file and N vhost files sharing one document
// root, for scale measurements (docs/operations.md).
func cmdGenVHosts(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hostd gen-vhosts", flag.ContinueOnError)
	out := fs.String("out", "", "output `dir` (created)")
	count := fs.Int("count", 1000, "number of vhosts")
	listen := fs.String("listen", "127.0.0.1:8443", "listen_https")
	admin := fs.String("admin-listen", "", "admin_listen (metrics); \"\" = off")
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	if *out == "" || *count < 1 {
		fmt.Fprintln(stderr, "hostd gen-vhosts: --out DIR and --count N >= 1 are required")
		return 2
	}
	if err := genVHosts(*out, *count, *listen, *admin); err != nil {
		fmt.Fprintln(stderr, "hostd gen-vhosts:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %d vhosts (v00000.test ... v%05d.test)\n", filepath.Join(*out, "hostd.toml"), *count, *count-1)
	return 0
}

// genVHosts writes dir/hostd.toml, dir/vhosts.d/vNNNNN.toml and a shared
// dir/www root with a 1 KiB index.html.
func genVHosts(dir string, n int, listen, admin string) error {
	for _, d := range []string{"vhosts.d", "www"} {
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
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	main := fmt.Sprintf("[server]\nlisten_https = %s\nvhosts = \"vhosts.d/*.toml\"\naccess_log = \"\"\nadmin_listen = %s\n", q(listen), q(admin))
	if err := os.WriteFile(filepath.Join(dir, "hostd.toml"), []byte(main), 0o644); err != nil {
		return err
	}
	for i := range n {
		name := fmt.Sprintf("v%05d", i)
		vf := fmt.Sprintf("server_name = \"%s.test\"\naliases = [\"www.%s.test\"]\nroot = \"../www\"\n", name, name)
		if err := os.WriteFile(filepath.Join(dir, "vhosts.d", name+".toml"), []byte(vf), 0o644); err != nil {
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
