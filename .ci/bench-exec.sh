#!/usr/bin/env bash
# Figures for narrowd's own sandbox: the overhead of running a command
# through `narrowd exec` against running the same command directly. Not
# run by CI: the numbers depend on the machine.
#
#   .ci/bench-exec.sh            # 30 runs per command
#   RUNS=100 .ci/bench-exec.sh
#
# It builds narrowd and narrowd-exec beside it, starts `narrowd serve` on
# a temporary socket and workspace, and measures side by side in one
# hyperfine run per command:
#   direct        sh -c "cd WS && CMD"
#   confine       narrowd-exec --confine --write WS -- sh -c "cd WS && CMD"
#                 (namespaces, Landlock, seccomp; no daemon)
#   confine-main  the same through `narrowd exec --confine`
#   ticket        the command the daemon's Claude answer rewrote CMD to:
#                 narrowd-exec --ticket T (claim, build the sandbox, the
#                 daemon verifies it from outside, release). A ticket is
#                 single-use, so hyperfine's --prepare asks the daemon for
#                 a fresh one before every timed run (the hook round trip
#                 is not timed).
#   ticket-main   the same ticket through `narrowd exec --ticket T`, the
#                 rewrite when no narrowd-exec is beside narrowd
#   bwrap         bubblewrap with the same isolation: user, network and PID
#                 namespaces, read-only root, a private /proc and /tmp,
#                 the workspace writable, its .git and .github/workflows
#                 read-only, the home directory hidden by a tmpfs
# for CMD = `sh noop.sh` of an empty script (the pure overhead; a bare
# `true` is proven harmless and never goes to the sandbox) and `make -s`
# of a one-rule Makefile,
# then prints the medians and the median ratios to direct, and the mean
# CPU time (user+system of the timed process tree; the daemon's share of
# a ticket is not in it), which a loaded machine distorts less.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-30}
for tool in go hyperfine python3 make bwrap; do
	command -v "$tool" >/dev/null || { echo "bench-exec: needs $tool" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/narrowd-bench-exec.XXXXXX)
cleanup() {
	[[ -n ${daemon_pid:-} ]] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# As the README builds them: a static binary starts without the dynamic
# loader, three times per sandboxed command.
CGO_ENABLED=0 go build -o "$tmp/" ./cmd/narrowd ./cmd/narrowd-exec
nd=$tmp/narrowd
ws=$tmp/ws
mkdir -p "$ws"
printf 'all:\n\t@echo built > out.txt\n' >"$ws/Makefile"
: >"$ws/noop.sh"
mkdir -p "$ws/.git/hooks" "$ws/.github/workflows"
sock=$tmp/run/narrowd.sock
"$nd" serve --socket "$sock" --state-dir "$tmp/state" --audit-dir "$tmp/audit" 2>"$tmp/serve.log" &
daemon_pid=$!
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.05; done

# prepare.sh CMD writes a fresh ticket command for CMD to $tmp/ticket.
cat >"$tmp/prepare.sh" <<PREP
#!/bin/sh
/usr/bin/python3 -c 'import json,sys; print(json.dumps({"session_id":"bench","transcript_path":"/t","cwd":sys.argv[1],"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":sys.argv[2]},"tool_use_id":"b"}))' "$ws" "\$1" |
	"$nd" hook --socket "$sock" claude |
	/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["hookSpecificOutput"]["updatedInput"]["command"])' >"$tmp/ticket"
sed "s#^'$nd-exec' #'$nd' exec #" "$tmp/ticket" >"$tmp/ticket-main"
PREP
chmod +x "$tmp/prepare.sh"

report=()
for cmd in "sh noop.sh" "make -s"; do
	"$tmp/prepare.sh" "$cmd" || { echo "bench-exec: the daemon did not rewrite '$cmd' to a ticket:"; cat "$tmp/serve.log"; exit 1; }
	json=$tmp/$(echo "$cmd" | tr -c 'a-z' '_').json
	hyperfine -N --runs "$runs" --warmup 3 --export-json "$json" \
		-n direct "sh -c 'cd $ws && $cmd'" \
		-n confine "$nd-exec --confine --write $ws -- sh -c 'cd $ws && $cmd'" \
		-n confine-main "$nd exec --confine --write $ws -- sh -c 'cd $ws && $cmd'" \
		--prepare "$tmp/prepare.sh '$cmd'" \
		-n ticket "sh -c '. $tmp/ticket'" \
		-n ticket-main "sh -c '. $tmp/ticket-main'" \
		-n bwrap "bwrap --unshare-user --unshare-net --unshare-pid --die-with-parent --new-session --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --tmpfs $HOME --bind $ws $ws --ro-bind $ws/.git $ws/.git --ro-bind $ws/.github/workflows $ws/.github/workflows sh -c 'cd $ws && $cmd'"
	report+=("$cmd=$json")
done

echo
echo "== narrowd exec overhead (medians of $runs runs; ratio = median / direct median)"
for entry in "${report[@]}"; do
	python3 - "${entry%%=*}" "${entry#*=}" <<'PY'
import json, sys
cmd, path = sys.argv[1], sys.argv[2]
res = {r["command"]: r for r in json.load(open(path))["results"]}
d = res["direct"]["median"]
dc = res["direct"]["user"] + res["direct"]["system"]
b = res["bwrap"]["median"] - d
for name in ("direct", "bwrap", "confine", "confine-main", "ticket", "ticket-main"):
    m = res[name]["median"]
    cpu = res[name]["user"] + res[name]["system"]
    vs = f"   overhead {((m-d)/b if b > 0 else float('nan')):5.2f}x bwrap's" if name not in ("direct", "bwrap") else ""
    print(f"{cmd:10s} {name:12s} median {m*1000:8.2f} ms   ratio {m/d:6.2f}x   (+{(m-d)*1000:.2f} ms)"
          f"   cpu {cpu*1000:7.2f} ms (+{(cpu-dc)*1000:.2f}){vs}")
PY
done
