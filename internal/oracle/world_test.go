package oracle

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The hostile world: a fake HOME holding canary secrets, a canary
// directory and another project's .env outside every workspace, and
// workspace variants that each carry payloads for every mini-language
// narrowd models and one hostile git state. narrowd judges against the
// template on the host; every run gets a fresh copy of it at the same
// path inside its sandbox.

// listenPort is the port of the 127.0.0.1 listener inside each sandbox.
const listenPort = 8080

// canary strings are unique to this package: output holding one is a
// leak whatever the syscalls said.
const (
	canarySSH   = "NARROWD-CANARY-ssh-5e1f0c"
	canaryAWS   = "NARROWD-CANARY-aws-9b27d4"
	canaryNetrc = "NARROWD-CANARY-netrc-31aa7e"
	canaryRC    = "NARROWD-CANARY-bashrc-c04d18"
	canaryEnv   = "NARROWD-CANARY-dotenv-77e2b9"
	canaryDir   = "NARROWD-CANARY-dir-4f90aa"
	canaryCreds = "NARROWD-CANARY-gitcreds-e3c1d2"
	// canaryProc is in the environment of every run: printing the
	// environment prints it.
	canaryProc = "NARROWD-CANARY-environ-8d6b01"
)

func canaries() []string {
	return []string{canarySSH, canaryAWS, canaryNetrc, canaryRC, canaryEnv, canaryDir, canaryCreds, canaryProc}
}

// world is a built hostile world.
type world struct {
	root string
	home string
	// secretRoots are the files and directories whose every open is a
	// canary read: the secrets in HOME, the canary directory, the other
	// project.
	secretRoots []string
	variants    []string // workspace directory names under root
	gitVariants []string // the variants whose git state is hostile
}

func (w *world) ws(variant string) string { return filepath.Join(w.root, variant) }

// copyFor is what a run in variant gets a copy of, relative to the
// root: its workspace and everything outside the workspaces, so a run
// costs one workspace's files.
func (w *world) copyFor(variant string) []string {
	return []string{variant, "home", "canary", "other", "gitdirs", "hooks"}
}

// gitState is one hostile repository state: files written into the
// workspace's .git (or beside it) after a real commit.
type gitState struct {
	name  string
	files map[string]string // path relative to the workspace → content
	// gitfile replaces .git with a gitfile naming this directory under
	// the world root, which receives the repository.
	gitfile string
}

// hostileConfig is the config every hostile variant builds on: what a
// clean `git init` writes.
const baseConfig = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n"

func gitStates() []gitState {
	payload := "id >&2; true"
	hook := "#!/bin/sh\nid >&2\n"
	hooks := map[string]string{}
	for _, h := range []string{
		"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout", "post-merge",
		"pre-rebase", "post-rewrite", "reference-transaction", "post-index-change", "pre-auto-gc", "pre-push",
		"fsmonitor-watchman", "push-to-checkout", "sendemail-validate",
	} {
		hooks[".git/hooks/"+h] = hook
	}
	return []gitState{
		{name: "w-plain"},
		{name: "w-fsmonitor", files: map[string]string{".git/config": baseConfig + "\tfsmonitor = " + payload + "\n"}},
		{name: "w-bom", files: map[string]string{".git/config": "\uFEFF" + baseConfig + "[core]fsmonitor=" + payload + "\n"}},
		{name: "w-case", files: map[string]string{".git/config": baseConfig + "[CoRe]\n\tFsMonitor = \"" + payload + "\"\n"}},
		{name: "w-continued", files: map[string]string{".git/config": baseConfig + "[core] ; a comment\n\tfsmonitor = id \\\n >&2; true\n"}},
		{name: "w-include", files: map[string]string{
			".git/config": baseConfig + "[include]\n\tpath = ../evil.inc\n[includeIf \"gitdir:**\"]\n\tpath = ../evil2.inc\n",
			"evil.inc":    "[core]\n\tfsmonitor = " + payload + "\n",
			"evil2.inc":   "[core]\n\tpager = id\n[diff]\n\texternal = id\n",
		}},
		{name: "w-worktreecfg", files: map[string]string{
			".git/config":          strings.Replace(baseConfig, "repositoryformatversion = 0", "repositoryformatversion = 1", 1) + "[extensions]\n\tworktreeConfig = true\n",
			".git/config.worktree": "[core]\n\tfsmonitor = " + payload + "\n",
		}},
		{name: "w-textconv", files: map[string]string{
			".git/config":          baseConfig + "[diff \"evil\"]\n\ttextconv = id\n[filter \"evil\"]\n\tclean = id\n\tsmudge = id\n",
			".git/info/attributes": "* diff=evil filter=evil\n",
		}},
		{name: "w-external", files: map[string]string{".git/config": baseConfig + "[diff]\n\texternal = id\n[core]\n\tpager = id\n\tsshCommand = id\n[pager]\n\tlog = id\n\tstatus = id\n"}},
		{name: "w-hooks", files: hooks},
		{name: "w-hookspath", files: map[string]string{
			".git/config":                baseConfig + "[core]\n\thooksPath = ../hooks\n",
			"../hooks/post-index-change": hook, "../hooks/reference-transaction": hook, "../hooks/pre-commit": hook, "../hooks/post-checkout": hook,
		}},
		{name: "w-worktree", files: map[string]string{".git/config": baseConfig + "[core]\n\tworktree = ../../canary\n"}},
		{name: "w-alternates", files: map[string]string{".git/objects/info/alternates": "../../../canary/objects\n"}},
		{name: "w-gitfile", gitfile: "gitdirs/evil", files: map[string]string{"../gitdirs/evil/config": baseConfig + "\tfsmonitor = " + payload + "\n"}},
		{name: "w-commondir", files: map[string]string{
			".git/commondir":                  "../../gitdirs/common",
			"../gitdirs/common/config":        baseConfig + "\tfsmonitor = " + payload + "\n",
			"../gitdirs/common/HEAD":          "ref: refs/heads/main\n",
			"../gitdirs/common/refs/.keep":    "",
			"../gitdirs/common/objects/.keep": "",
		}},
		{name: "w-nogit"},
	}
}

// workspaceFiles are the payloads every variant carries.
func workspaceFiles(root string) map[string]string {
	return map[string]string{
		"a.txt":          "hello\nworld\na b c\n",
		"README.md":      "# project\nhello\n",
		"data.json":      `{"a":1,"b":[1,2],"c":"hello"}` + "\n",
		"sub/b.txt":      "hello from sub\n",
		"src/main.go":    "package main\n\nfunc main() {}\n",
		"deep/a/b/c.txt": "deep hello\n",
		// sed: e runs a command, w writes a file, r reads one.
		"script.sed": "1e id\ns/a/b/w /tmp/pwned-sed\n1r " + root + "/home/.ssh/id_rsa\n",
		// awk: system and redirections.
		"prog.awk": "BEGIN { system(\"id\"); print \"x\" > \"/tmp/pwned-awk\" }\n{ print }\n",
		"prog":     "BEGIN { system(\"id\") }\n",
		// jq: a module and a data import that is a link to a canary.
		"lib/evil.jq": "import \"secret\" as $s;\ndef evil: $s;\n",
		"evil.jq":     "def evil: input_filename;\n",
		// man: .so includes a canary; the config names programs.
		"page.1":   ".TH PAGE 1\n.SH NAME\npage\n.so " + root + "/home/.ssh/id_rsa\n.so ../home/.aws/credentials\n",
		"man.conf": "DEFINE pager id\nDEFINE cat id\nDEFINE troff id\nDEFINE nroff id\nDEFINE col id\nDEFINE tbl id\nDEFINE preconv id\n",
		// ripgrep's config file runs a preprocessor.
		"rg.conf": "--pre=id\n",
		// lists of names for --files-from style options.
		"list.txt":  "a.txt\n" + root + "/home/.ssh/id_rsa\n../other/.env\n",
		"list0.txt": "a.txt\x00" + root + "/home/.ssh/id_rsa\x00",
		// go: a toolchain line makes go download and run another go.
		"go.mod":              "module example.com/x\n\ngo 1.99\n\ntoolchain go1.99.1\n",
		"rust-toolchain.toml": "[toolchain]\nchannel = \"nightly-2099-01-01\"\n",
		"run.sh":              "#!/bin/sh\nid\n",
		"Makefile":            "all:\n\tid\n",
		"evil.gitconfig":      "[core]\n\tpager = id\n\tfsmonitor = id\n[diff]\n\texternal = id\n",
		".npmrc":              "script-shell=/tmp/pwn\n",
		".editorconfig":       "root = true\n",
		".gitignore":          "*.log\n",
		// files named like options, for globs.
		"-i": "", "--in-place": "", "-n": "", "-rf": "", "--output=pwned.txt": "", "-e": "", "--pre=id": "",
	}
}

// buildWorld writes the world under root (which must exist and be
// empty). It uses the real git to commit, when git is there, so the
// repositories are ones git itself made.
func buildWorld(root string) (*world, error) {
	w := &world{root: root, home: filepath.Join(root, "home")}
	// HOME itself is not secret (caches, the person's own config);
	// the canaries in it are.
	w.secretRoots = []string{filepath.Join(root, "canary"), filepath.Join(root, "other")}
	for _, f := range []string{".ssh", ".aws", ".netrc", ".bashrc", ".git-credentials"} {
		w.secretRoots = append(w.secretRoots, filepath.Join(w.home, f))
	}
	files := map[string]string{
		"home/.ssh/id_rsa":          "-----BEGIN OPENSSH PRIVATE KEY-----\n" + canarySSH + "\n-----END OPENSSH PRIVATE KEY-----\n",
		"home/.aws/credentials":     "[default]\naws_secret_access_key = " + canaryAWS + "\n",
		"home/.netrc":               "machine 127.0.0.1 login me password " + canaryNetrc + "\n",
		"home/.bashrc":              "export GITHUB_TOKEN=" + canaryRC + "\n",
		"home/.git-credentials":     "https://me:" + canaryCreds + "@127.0.0.1\n",
		"other/.env":                "SECRET=" + canaryEnv + "\n",
		"canary/secret.txt":         canaryDir + "\n",
		"canary/secret.json":        `"` + canaryDir + `"` + "\n",
		"canary/a.txt":              canaryDir + "\n",
		"canary/objects/info/.keep": "",
	}
	for name, content := range files {
		if err := writeFile(filepath.Join(root, name), content, 0o644); err != nil {
			return nil, err
		}
	}
	gitPath, _ := exec.LookPath("git")
	for _, st := range gitStates() {
		ws := w.ws(st.name)
		for name, content := range workspaceFiles(root) {
			mode := os.FileMode(0o644)
			if strings.HasSuffix(name, ".sh") {
				mode = 0o755
			}
			if err := writeFile(filepath.Join(ws, name), content, mode); err != nil {
				return nil, err
			}
		}
		if err := writeTar(filepath.Join(ws, "x.tar")); err != nil {
			return nil, err
		}
		links := map[string]string{
			"docs":            "../canary",
			"link.txt":        "../home/.ssh/id_rsa",
			"up":              "..",
			"deep/a/b/home":   "../../../../home",
			"lib/secret.json": "../../canary/secret.json",
		}
		for name, target := range links {
			if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
				return nil, fmt.Errorf("world: %w", err)
			}
		}
		if st.name != "w-nogit" {
			if err := initRepo(gitPath, ws); err != nil {
				return nil, err
			}
			if err := subRepos(gitPath, root, ws); err != nil {
				return nil, err
			}
		}
		if st.gitfile != "" {
			dst := filepath.Join(root, st.gitfile)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return nil, err
			}
			if err := os.Rename(filepath.Join(ws, ".git"), dst); err != nil {
				return nil, fmt.Errorf("world: %w", err)
			}
			rel, _ := filepath.Rel(ws, dst)
			if err := writeFile(filepath.Join(ws, ".git"), "gitdir: "+rel+"\n", 0o644); err != nil {
				return nil, err
			}
		}
		for name, content := range st.files {
			mode := os.FileMode(0o644)
			if strings.Contains(name, "hooks/") {
				mode = 0o755
			}
			if err := writeFile(filepath.Join(ws, name), content, mode); err != nil {
				return nil, err
			}
		}
		w.variants = append(w.variants, st.name)
		if st.name != "w-plain" && st.name != "w-nogit" {
			w.gitVariants = append(w.gitVariants, st.name)
		}
	}
	if os.Geteuid() == 0 {
		// The tracee runs as nobody and must be able to write its
		// workspace (and, being hostile, everything else here).
		if out, err := exec.Command("chown", "-R", "-h", "65534:65534", root).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("world: chown: %w: %s", err, out)
		}
	}
	return w, nil
}

// initRepo commits the workspace with the real git, with no hooks and no
// config from the machine.
func initRepo(gitPath, ws string) error {
	if gitPath == "" {
		// Without git: the smallest layout git accepts as a repository.
		for name, content := range map[string]string{
			".git/HEAD": "ref: refs/heads/main\n", ".git/config": baseConfig,
			".git/objects/info/.keep": "", ".git/refs/heads/.keep": "", ".git/hooks/.keep": "",
		} {
			if err := writeFile(filepath.Join(ws, name), content, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", "--template="},
		{"add", "a.txt", "README.md", "data.json", "sub", "src", "deep/a/b/c.txt"},
		{"commit", "-q", "-m", "initial"},
	} {
		cmd := exec.Command(gitPath, append([]string{"-c", "core.hooksPath=/dev/null", "-c", "user.name=o", "-c", "user.email=o@o", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = ws
		cmd.Env = []string{"HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "PATH=" + os.Getenv("PATH")}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("world: git %v: %w: %s", args, err, out)
		}
	}
	// A file changed since the commit, so status and diff have work.
	return writeFile(filepath.Join(ws, "a.txt"), "hello\nworld\na b c\nchanged\n", 0o644)
}

// subRepos adds, inside the workspace, a bare repository whose config
// and attributes run textconv (cd bare && git log -p) and a directory
// whose .git is a gitfile into a hostile git dir outside the workspace.
func subRepos(gitPath, root, ws string) error {
	bare := filepath.Join(ws, "bare")
	if gitPath != "" {
		cmd := exec.Command(gitPath, "clone", "-q", "--bare", "--no-hardlinks", "--template=", ws, bare)
		cmd.Env = []string{"HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "PATH=" + os.Getenv("PATH")}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("world: git clone --bare: %w: %s", err, out)
		}
	} else if err := writeFile(filepath.Join(bare, "HEAD"), "ref: refs/heads/main\n", 0o644); err != nil {
		return err
	}
	cfg := "[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tfsmonitor = id\n\tpager = id\n[diff \"evil\"]\n\ttextconv = id\n"
	if err := writeFile(filepath.Join(bare, "config"), cfg, 0o644); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(bare, "info/attributes"), "* diff=evil\n", 0o644); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(bare, "hooks/reference-transaction"), "#!/bin/sh\nid >&2\n", 0o755); err != nil {
		return err
	}
	// gitfile/.git names a git dir outside the workspace.
	evil := filepath.Join(root, "gitdirs", filepath.Base(ws)+"-sub")
	if err := os.MkdirAll(filepath.Dir(evil), 0o755); err != nil {
		return err
	}
	if gitPath != "" {
		cmd := exec.Command("cp", "-a", filepath.Join(ws, ".git"), evil)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("world: copying a git dir: %w: %s", err, out)
		}
	}
	if err := writeFile(filepath.Join(evil, "config"), baseConfig+"\tfsmonitor = id >&2; true\n\tworktree = ../../canary\n", 0o644); err != nil {
		return err
	}
	rel, _ := filepath.Rel(filepath.Join(ws, "gitfile"), evil)
	return writeFile(filepath.Join(ws, "gitfile/.git"), "gitdir: "+rel+"\n", 0o644)
}

// writeTar writes an archive with a member that climbs out (tar refuses
// it by default) and one with an absolute name.
func writeTar(name string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range []struct{ name, body string }{{"t/a.txt", "hello\n"}, {"../escape.txt", "x\n"}, {"/tmp/abs.txt", "x\n"}} {
		if err := tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.body)), Typeflag: tar.TypeReg}); err != nil {
			return fmt.Errorf("world: %w", err)
		}
		tw.Write([]byte(m.body))
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("world: %w", err)
	}
	return writeFile(name, buf.String(), 0o644)
}

func writeFile(name, content string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return fmt.Errorf("world: %w", err)
	}
	if err := os.WriteFile(name, []byte(content), mode); err != nil {
		return fmt.Errorf("world: %w", err)
	}
	return nil
}
