package parse

import "testing"

// TestClassifyJq covers what a jq program can reach besides its input:
// modules and data files, the environment, program files.
func TestClassifyJq(t *testing.T) {
	t.Parallel()
	runCases(t, []classifyCase{
		{name: "jq-field", cmd: "jq .name package.json", known: true, mut: "read", paths: "read package.json"},
		{name: "jq-raw-select", cmd: "jq -r '.[] | select(.ok) | .id' a.json", known: true, paths: "read a.json"},
		{name: "jq-import-L", cmd: "jq -L . 'import \"x\" as y; .'", known: false, why: "import"},
		{name: "jq-import-data", cmd: "jq -n 'import \"data\" as $d; $d'", known: false, why: "import"},
		{name: "jq-include", cmd: "jq 'include \"x\"; .' f.json", known: false, why: "include"},
		{name: "jq-modulemeta", cmd: "jq -n '\"x\" | modulemeta'", known: false, why: "modulemeta"},
		{name: "jq-library-path-long", cmd: "jq --library-path /tmp 'import \"x\" as y; .'", known: false, why: "import"},
		{name: "jq-env", cmd: "jq -n env", known: true, paths: "read /proc/self/environ"},
		{name: "jq-ENV", cmd: "jq -n '$ENV'", known: true, paths: "read /proc/self/environ"},
		{name: "jq-ENV-field", cmd: "jq -n '$ENV.AWS_SECRET_ACCESS_KEY'", known: true, paths: "read /proc/self/environ"},
		{name: "jq-rawfile", cmd: "jq -n --rawfile s /etc/shadow '$s'", known: true, paths: "read /etc/shadow"},
		{name: "jq-slurpfile", cmd: "jq -n --slurpfile s ../x.json '$s'", known: true, paths: "read ../x.json"},
		{name: "jq-from-file-long", cmd: "jq --from-file p.jq d.json", known: false, why: "narrowd cannot see"},
		{name: "jq-run-tests", cmd: "jq --run-tests t.txt", known: false, why: "run-tests"},
		{name: "jq-loc-is-harmless", cmd: "jq -n '$__loc__'", known: true, paths: "-"},
		{name: "jq-input-filename", cmd: "jq input_filename a.json", known: true, paths: "read a.json"},
		{name: "yq-load", cmd: "yq '.a = load(\"/etc/passwd\")' f.yaml", known: false, why: "load"},
		{name: "yq-split-exp", cmd: "yq -s '.name' f.yaml", known: false, why: "yq -s"},
		{name: "yq-strenv", cmd: "yq -n 'strenv(HOME)'", known: true, paths: "read /proc/self/environ"},
		{name: "yq-eval-sub-load", cmd: "yq eval 'load(\"/root/.ssh/id_rsa\")' f.yaml", known: false, why: "load"},
		{name: "yq-e-sub-env", cmd: "yq e '.a | env(HOME)' f.yaml", known: true, paths: "read .a | env(HOME); read f.yaml; read /proc/self/environ"},
		{name: "yq-eval-operator", cmd: "yq '.x | eval(.)' f.yaml", known: false, why: "eval"},
		{name: "yq-plain", cmd: "yq '.a.b' f.yaml", known: true, mut: "read", paths: "read f.yaml"},
		{name: "yq-python-import", cmd: "yq 'import \"x\" as y; .' f.yaml", known: false, why: "import"},
		{name: "yq-eval-all-plain", cmd: "yq ea '. as $i ireduce ({}; . * $i)' a.yaml b.yaml", known: true},
	})
}
