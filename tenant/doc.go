// Package tenant loads and validates hostd's configuration: the main TOML
// file and one TOML file per tenant (virtual host). Decoding is strict
// (unknown keys are errors), every error names its file and line, and a
// loaded Config is immutable, so a broken file never replaces a working
// configuration. The package knows nothing of serving.
package tenant
