// Package oracle checks narrowd's allow verdicts against the real tools.
//
// Its tests generate shell calls from the command knowledge table itself
// (parse/knowledge/*.toml: every command, subcommand and listed flag,
// abbreviated long options, clustered short flags, hostile option values,
// wrappers and compositions), judge each with the engine `narrowd check`
// uses, and run every call narrowd allows with the real bash under strace,
// in namespaces with no network, a read-only root, a fresh tmpfs for /tmp
// and the hostile world, as an unprivileged user. A call fails the oracle
// when it runs a program the analysis does not name, writes outside what
// the verdict claims, connects anywhere, or opens a canary secret.
//
// The package holds no code outside its tests: the oracle is a test of
// the other packages, and nothing may import it.
package oracle
