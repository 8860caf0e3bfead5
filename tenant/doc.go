// Package tenant loads and validates hostd's configuration: the main TOML
// file and one TOML file per tenant (virtual host). Decoding is strict
// (unknown keys are errors), every error names its file and line, and a
// loaded Config is immutable, so a broken file never replaces a working
// configuration. A zero key means its default: each default is defined
// once (defaults.go, or the lower layer's option it configures, such as
// scripting.DefaultTimeout or phpfpm.DefaultWorkers; [sessions] keys stay
// zero, host/session's defaults) and applied in one place (setDefaults, which
// Load runs per table and Config.WithDefaults exposes). Encode writes a
// MainFile or VHost back as TOML, the one writer of configuration files.
// The package knows nothing of serving.
package tenant
