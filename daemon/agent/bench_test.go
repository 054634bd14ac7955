package agent

import (
	"bytes"
	"testing"

	"github.com/narrowd/narrowd/rules"
)

func BenchmarkDecode(b *testing.B) {
	for _, fx := range fixtures(b) {
		if fx.name != "pre-bash" {
			continue
		}
		b.Run(fx.agent, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(fx.data)))
			for b.Loop() {
				if _, err := Decode(fx.agent, bytes.NewReader(fx.data)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	call := rules.Call{Agent: Claude, Event: "PreToolUse", Phase: rules.PreTool, Tool: "Bash"}
	d := rules.Decision{Outcome: rules.Deny, Rule: "write-outside-root", Reason: "rm -rf targets ../ outside the workspace root"}
	b.ReportAllocs()
	for b.Loop() {
		Encode(Claude, call, d, Options{})
	}
}
