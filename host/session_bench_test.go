package host_test

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/host/session/sessiontest"
)

// benchSessionHook stores n bytes on a session's first request; later
// requests load them and update a counter.
const benchSessionHook = `
local n = tonumber(r.args.n)
if r.args.first then
  r.session:set("data", string.rep("x", n))
else
  local d = r.session:get("data")
  if d == nil or #d ~= n then return 500 end
  r.session:set("c", (r.session:get("c") or 0) + 1)
end
r:write("ok")
`

// BenchmarkSessionMixHTTP is the session mix of host/session's
// BenchmarkSessionMix through the whole server: HTTPS (keep-alive), a Lua
// content hook, and the store. It reports mean and p90 latency per
// request and the CPU per request of the test process (client and
// server) and of the store server (sessiontest.Meter).
func BenchmarkSessionMixHTTP(b *testing.B) {
	steps, kinds := sessiontest.Schedule()
	for _, store := range []string{"memory", "redis", "memcached"} {
		b.Run(store, func(b *testing.B) {
			var sessions string
			var servers []*sessiontest.Server
			switch store {
			case "redis":
				s := sessiontest.Redis(b)
				servers = append(servers, s)
				sessions = fmt.Sprintf("[sessions]\nstore = \"redis\"\nurl = \"redis://%s/0\"\n", s.Addr)
			case "memcached":
				s := sessiontest.Memcached(b)
				servers = append(servers, s)
				sessions = fmt.Sprintf("[sessions]\nstore = \"memcached\"\nservers = [%q]\n", s.Addr)
			}
			srv := hosttest.Start(b, hosttest.Files{
				"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../pub\"\nrun_as_server = true\n" + sessions + "[[hooks]]\nphase = \"content\"\nfile = \"../hooks/s.lua\"\n",
				"pub/":            "",
				"hooks/s.lua":     benchSessionHook,
			})
			c := srv.Client("a.example", false)
			cookies := make([]string, len(kinds))
			do := func(st sessiontest.Step) {
				k := kinds[st.Sess]
				url := "https://a.example/?n=" + strconv.Itoa(k.Bytes)
				if st.Req == 0 {
					url += "&first=1"
				}
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				if st.Req > 0 {
					req.Header.Set("Cookie", cookies[st.Sess])
				}
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
				for _, ck := range resp.Cookies() {
					if ck.Name == "hostd_session" {
						cookies[st.Sess] = ck.Name + "=" + ck.Value
					}
				}
			}
			do(steps[0]) // warm up: VM, TLS session, store connection
			clear(cookies)
			m := sessiontest.NewMeter(servers)
			i := 0
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if i%len(steps) == 0 {
					clear(cookies)
				}
				m.Time(func() { do(steps[i%len(steps)]) })
				i++
			}
			b.StopTimer()
			m.Report(b)
		})
	}
}
