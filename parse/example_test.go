package parse_test

import (
	"fmt"

	"github.com/narrowd/narrowd/parse"
)

func ExampleParse() {
	s, err := parse.Parse(`cd web && FOO=1 npm test > "out file.log" 2>&1 || echo $(date)`)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range s.Commands {
		for _, w := range c.Argv {
			if w.Literal {
				fmt.Printf("%q ", w.Value)
			} else {
				fmt.Printf("<%s> ", w.Why)
			}
		}
		for _, r := range c.Redirs {
			fmt.Printf("%s%s%q ", r.Fd, r.Op, r.Target.Value)
		}
		fmt.Println("in", c.Dirs)
	}
	// Output:
	// "cd" "web" in []
	// "npm" "test" >"out file.log" 2>&"1" in [web]
	// "echo" <command substitution> in [. web]
	// "date" in [. web]
}

func ExampleAnalyze() {
	k, err := parse.LoadKnowledge([]byte(`
[cmd.sudo]
mutation = "read"
privileged = true
args = ["cmd?"]
parser = "gnu"
permute = false

[cmd.rm]
mutation = "read"
args = ["delete+"]
flags = ["-f"]
flag."-r|--recursive" = { recursive = true }
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	a := parse.Analyze(`sudo rm -rf build; rm $f`, k)
	for _, p := range a.Programs {
		fmt.Println(p.Wrappers, p.Name, p.Known, p.Mutation, p.Privileged)
		for _, pa := range p.Paths {
			fmt.Println("   ", pa.Access, pa.Word.Value, pa.Recursive)
		}
	}
	for _, u := range a.Unproven {
		fmt.Println("unproven:", u.Pos, u.Why)
	}
	fmt.Println("proven:", a.Proven())
	// Output:
	// [] sudo true read true
	// [sudo] rm true delete true
	//     delete build true
	// [] rm false delete false
	// unproven: 1:23 parameter expansion
	// proven: false
}
