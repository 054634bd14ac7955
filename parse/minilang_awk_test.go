package parse

import "testing"

// TestClassifyAwkOptions covers the awk options that name program files,
// includes and extensions, in gawk's and mawk's spellings.
func TestClassifyAwkOptions(t *testing.T) {
	t.Parallel()
	runCases(t, []classifyCase{
		{name: "awk-W-exec", cmd: "awk -W exec p.awk", known: false, why: "awk -W"},
		{name: "awk-W-ex-attached", cmd: "awk -Wex p.awk", known: false, why: "awk -W"},
		{name: "awk-W-e", cmd: "mawk -W e p.awk", known: false, why: "awk -W"},
		{name: "awk-W-source", cmd: "gawk -W source='BEGIN{system(\"id\")}'", known: false, why: "awk -W"},
		{name: "awk-W-load", cmd: "gawk -W load=./x.so '{print}' f", known: false, why: "awk -W"},
		{name: "awk-W-version", cmd: "awk -W version", known: false, why: "awk -W"},
		{name: "awk-exec-long", cmd: "gawk --exec p.awk", known: false, why: "awk -E"},
		{name: "awk-exec-abbrev", cmd: "gawk --ex=p.awk", known: false, why: "awk -E"},
		{name: "awk-E", cmd: "gawk -E p.awk", known: false, why: "awk -E"},
		{name: "awk-f", cmd: "awk -f p.awk f", known: false, why: "awk -f"},
		{name: "awk-f-clustered", cmd: "awk -vx=1 -fp.awk f", known: false, why: "awk -f"},
		{name: "awk-include-short", cmd: "gawk -i x '{print}' f", known: false, why: "AWKPATH"},
		{name: "awk-include-long", cmd: "gawk --include=inplace '{print}' f", known: false, why: "AWKPATH"},
		{name: "awk-include-abbrev", cmd: "gawk --incl inplace '{print}' f", known: false, why: "AWKPATH"},
		{name: "awk-load", cmd: "gawk -l ./x '{print}' f", known: false, why: "awk -l"},
		{name: "awk-load-abbrev", cmd: "gawk --lo ./x '{print}' f", known: false, why: "awk -l"},
		{name: "awk-dump-vars", cmd: "gawk -d/tmp/x '{print}' f", known: false, why: "awk -d"},
		{name: "awk-source-long", cmd: "gawk --source '{print $1}' f", known: true, paths: "read f"},
		{name: "awk-source-abbrev-system", cmd: "gawk --so 'BEGIN{system(\"id\")}'", known: false, why: "system"},
		{name: "awk-sandbox", cmd: "gawk --sandbox '{print $1}' f", known: true, paths: "read f"},
		{name: "awk-trace-is-not-an-abbrev-of-traditional", cmd: "gawk --tra '{print}' f", known: false, why: "ambiguous"},
		{name: "awk-csv", cmd: "gawk -k '{print $2}' f.csv", known: true, paths: "read f.csv"},
		{name: "awk-environ", cmd: "awk 'BEGIN{print ENVIRON[\"HOME\"]}'", known: true, paths: "read /proc/self/environ"},
	})
}
