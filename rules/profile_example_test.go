package rules_test

import (
	"fmt"

	"github.com/narrowd/narrowd/rules"
)

func ExampleLoadProfile() {
	src := `
[[rule]]
id = "read-workspace"
when = 'call.mutation == "read" && at_most("scope", "bulk") && call.egress == "none"'
then = "allow"
reason = "reads inside the workspace send nothing anywhere"

[[rule]]
id = "unlabelled-ask"
when = 'call.unlabelled'
then = "ask"
reason = "nobody has labelled this tool"
`
	p, err := rules.LoadProfile("team.toml", []byte(src))
	if err != nil {
		fmt.Println(err)
		return
	}
	read := rules.Labels{}
	read.Levels[rules.ReturnsClass] = 1 // third_party_content
	fmt.Println(p.Decide(rules.Input{Call: &rules.Call{Tool: "Read"}, Ceiling: &read}))
	fmt.Println(p.Decide(rules.Input{Call: &rules.Call{Tool: "mcp__tracker__update"}}))
	write := read.With(rules.Mutation, 3)
	fmt.Println(p.Decide(rules.Input{Call: &rules.Call{Tool: "Write"}, Ceiling: &write}))
	// Output:
	// {allow read-workspace reads inside the workspace send nothing anywhere}
	// {ask unlabelled-ask nobody has labelled this tool}
	// {ask no-match no profile rule allowed this call}
}

func ExampleCheckProfile() {
	src := `
[[rule]]
id = "allow-deletes"
when = 'call.mutation == "delete" && call.egress == "none"'
then = "allow"
reason = "oops"
`
	for _, p := range rules.CheckProfile("team.toml", []byte(src)) {
		fmt.Println(p.Line, p.Rule)
	}
	// Output:
	// 4 allow-deletes
}
