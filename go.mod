module github.com/hostd/hostd

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/yuin/gopher-lua v1.1.2
	golang.org/x/sys v0.50.0
)
