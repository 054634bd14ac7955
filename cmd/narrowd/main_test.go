package main

import (
	"context"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"narrowd": func() {
			os.Exit(run(context.Background(), env{os.Stdin, os.Stdout, os.Stderr, os.Getenv}, os.Args[1:]))
		},
	})
}

func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "../../testdata/script"})
}
