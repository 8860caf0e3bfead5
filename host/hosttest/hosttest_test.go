package hosttest

import "testing"

// TestMainConfig: the text form of Main is what the encoder writes.
func TestMainConfig(t *testing.T) {
	if got := TOML(t, Main()); got != MainConfig {
		t.Errorf("TOML(Main()) =\n%s\nMainConfig =\n%s", got, MainConfig)
	}
}
