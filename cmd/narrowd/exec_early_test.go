package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/narrowd/narrowd/cmd/internal/quickstage"
)

// TestConfigAcceptedKnowsEveryKey: quickstage's early exec reads the
// config file only in a subset of TOML it checks key by key; each key of
// fileConfig, set to a value of its type, is in it (else a config that
// sets it sends every ticket through main), and an unknown key is not.
func TestConfigAcceptedKnowsEveryKey(t *testing.T) {
	samples := map[reflect.Type]string{
		reflect.TypeFor[string]():    `"x"`,
		reflect.TypeFor[[]string]():  `["a", 'b']`,
		reflect.TypeFor[int]():       "3",
		reflect.TypeFor[int64]():     "67108864",
		reflect.TypeFor[bool]():      "true",
		reflect.TypeFor[*bool]():     "false",
		reflect.TypeFor[duration]():  `"10m"`,
		reflect.TypeFor[*duration](): `"10ms"`,
	}
	typ := reflect.TypeFor[fileConfig]()
	var all []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		v, ok := samples[f.Type]
		if !ok {
			t.Fatalf("fileConfig.%s: no sample value of type %s", f.Name, f.Type)
		}
		line := f.Tag.Get("toml") + " = " + v
		all = append(all, line)
		if !quickstage.ConfigAccepted([]byte(line)) {
			t.Errorf("ConfigAccepted(%q) = false", line)
		}
	}
	text := strings.Join(all, "\n") + "\n"
	if !quickstage.ConfigAccepted([]byte(text)) {
		t.Errorf("ConfigAccepted of every key = false")
	}
	if !checkSameSocket(t, []byte(text)) {
		t.Errorf("the early exec does not take a config of every key")
	}
	if quickstage.ConfigAccepted([]byte(text + "nosuchkey = 1\n")) {
		t.Errorf("ConfigAccepted takes an unknown key")
	}
}

var configCases = []struct {
	text  string
	early bool // the early exec takes it
}{
	{"", true},
	{"# nothing\n\n", true},
	{"socket = \"/s\"\n", true},
	{"socket = '/s' # mine\r\n", true},
	{"socket = \"~/s\"\nprofile = \"standard\"\n", true},
	{"socket = \"\"\n", true},
	{"Socket = \"/s\"\n", false},
	{"socket = \"/s\"\nsocket = \"/t\"\n", false},
	{"socket = \"/s\"\n[table]\n", false},
	{"socket = 1\n", false},
	{"audit_keep = \"8\"\nsocket = \"/s\"\n", false},
	{"audit_keep = 08\n", false},
	{"audit_keep = 1_000\n", false},
	{"audit_max_size = 99999999999999999999\n", false},
	{"interactive = yes\n", false},
	{"interactive = true# x\n", true},
	{"ticket_ttl = \"60\"\n", false},
	{"ticket_ttl = \"60s\"\n", true},
	{"workspaces = [\"/a\", '/b',]\n", true},
	{"workspaces = [\n\"/a\"]\n", false},
	{"workspaces = []\n", true},
	{"workspaces = [\"/a\" \"/b\"]\n", false},
	{"workspaces = \"/a\"\n", false},
	{"socket = \"\"\"/s\"\"\"\n", false},
	{"socket = ''\n", true},
	{"socket = \"/s\" x\n", false},
	{"socket = \"/s\\t\"\n", false},
	{"socket = \"/s\" # \x01\n", false},
	{"\ufeffsocket = \"/s\"\n", false},
	{"socket = \"/\xff\"\n", false},
	{"mcp = false\nsnapshots = true\n", true},
	{"socket.x = \"/s\"\n", false},
	{"\"socket\" = \"/s\"\n", false},
	{"socket = \"/s\"\n = 3\n", false},
}

func TestConfigSocketAsMain(t *testing.T) {
	for _, c := range configCases {
		if took := checkSameSocket(t, []byte(c.text)); took != c.early {
			t.Errorf("config %q: the early exec takes it: %v, want %v", c.text, took, c.early)
		}
	}
}

// FuzzConfigSocketAsMain: whenever the early exec takes a config file, main
// reads it without an error and finds the same socket.
func FuzzConfigSocketAsMain(f *testing.F) {
	for _, c := range configCases {
		f.Add([]byte(c.text))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkSameSocket(t, b) })
}

// checkSameSocket writes b as the default config file and compares the
// socket quickstage finds with the one main's config loading finds. It
// reports whether the early exec takes the file.
func checkSameSocket(t *testing.T, b []byte) bool {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "config", "narrowd", "config.toml")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"HOME": dir, "XDG_CONFIG_HOME": filepath.Join(dir, "config"), "XDG_RUNTIME_DIR": filepath.Join(dir, "run")}
	getenv := func(k string) string { return vars[k] }
	sock, ok := quickstage.SocketPath("", getenv)
	if !ok {
		return false
	}
	e := env{getenv: getenv}
	c, err := loadConfig(e, "")
	if err != nil {
		t.Fatalf("config %q: the early exec takes it (socket %q), main refuses it: %v", b, sock, err)
	}
	c.defaults(e)
	if c.Socket != sock {
		t.Fatalf("config %q: the early exec asks %q, main %q", b, sock, c.Socket)
	}
	return true
}
