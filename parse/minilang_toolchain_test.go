package parse

import "testing"

// TestClassifyToolchainSwitch: go reads go.mod and go.work, the rustup
// proxies rust-toolchain.toml, before anything else, and may download or
// run the toolchain those files name; no form of go, cargo, rustc or
// rustup is a plain read.
func TestClassifyToolchainSwitch(t *testing.T) {
	t.Parallel()
	runCases(t, []classifyCase{
		{name: "go-version", cmd: "go version", known: true, code: "y", net: "internet"},
		{name: "go-env", cmd: "go env", known: true, code: "y", net: "internet"},
		{name: "go-env-var", cmd: "go env GOPATH", known: true, code: "y", net: "internet"},
		{name: "go-list-m", cmd: "go list -m", known: true, code: "y", net: "internet"},
		{name: "go-doc", cmd: "go doc fmt.Println", known: true, code: "y", net: "internet"},
		{name: "go-help", cmd: "go help build", known: true, code: "y", net: "internet"},
		{name: "go-h", cmd: "go -h", known: true, code: "y", net: "internet"},
		{name: "go-mod-graph", cmd: "go mod graph", known: true, code: "y", net: "internet"},
		{name: "cargo-version", cmd: "cargo --version", known: true, code: "y", net: "internet"},
		{name: "cargo-V", cmd: "cargo -V", known: true, code: "y"},
		{name: "cargo-tree", cmd: "cargo tree --offline", known: true, code: "y"},
		{name: "rustc-version", cmd: "rustc --version", known: true, code: "y", net: "internet"},
		{name: "rustc-print", cmd: "rustc --print sysroot", known: true, code: "y"},
		{name: "rustup-show", cmd: "rustup show", known: true, code: "y", net: "internet"},
		{name: "rustup-version", cmd: "rustup --version", known: true, code: "y"},
	})
}
