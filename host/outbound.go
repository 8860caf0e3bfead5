package host

import (
	"github.com/hostd/hostd/scripting/outbound"
	"github.com/hostd/hostd/tenant"
)

// newOutbound returns the vhost's client for hostd.http.request, or nil
// when its outbound key is empty. The addresses of every session store in
// the configuration are protected: a hook reaches them only through an
// address entry naming them exactly, and never when the vhost files are
// the tenants' own (server.vhost_files_trusted = false).
func newOutbound(cfg *tenant.Config, vc *tenant.VHost) (*outbound.Client, error) {
	if len(vc.Outbound) == 0 {
		return nil, nil
	}
	hosts := vc.Sessions.StoreHosts()
	if cfg != nil {
		hosts = append(hosts, cfg.Sessions.StoreHosts()...)
		for _, v := range cfg.VHosts {
			hosts = append(hosts, v.Sessions.StoreHosts()...)
		}
	}
	// A vhost file the tenant may write (vhost_files_trusted = false)
	// cannot open the way to the stores by naming their addresses.
	closed := cfg != nil && cfg.Server.VHostFilesTrusted != nil && !*cfg.Server.VHostFilesTrusted
	return outbound.New(outbound.Options{Allow: vc.Outbound, Protected: outbound.ResolveHosts(hosts), StoresClosed: closed})
}
