#!/usr/bin/env bash
# Figures for narrowd's hook path: how long one agent tool call waits for
# narrowd, against a trivial process and the peer cc-safety-net, and what
# the daemon sustains. Not run by CI: the numbers depend on the machine.
#
#   .ci/bench-hook.sh            # hyperfine runs of 40+ calls each, 10 s load
#   RUNS=100 LOAD_SECONDS=20 .ci/bench-hook.sh
#
# It builds narrowd, starts `narrowd serve` on a temporary socket and
# loopback ports, and measures in ONE hyperfine run, on the same two Claude
# PreToolUse Bash payloads (`ls -la src` and `rm -rf ~/x`):
#   floor     a static Go binary that reads stdin and prints {}
#   small     narrowd-hook claude, daemon up: the shim as its own small
#             binary, what `narrowd install` writes (CGO_ENABLED=0)
#   shim      narrowd hook claude, daemon up (CGO_ENABLED=0, as the README builds it)
#   shim-cgo  the same from a default, dynamically linked build
#   fallback  narrowd hook claude, daemon down (in-process engine)
#   curl      an HTTP round trip to the daemon's /hook/claude (curl is a
#             process too; BenchmarkHTTPRoundTrip below is the same round
#             trip without it)
#   ccsn      cc-safety-net hook --coding-cli, installed from npm into a
#             cache directory
# then prints the in-daemon decision time (BenchmarkJudgeInDaemon p50/p99),
# decisions/s with 64 concurrent clients, keep-alive http and shims over
# the Unix socket (.ci/loadgen, with the daemon's CPU per decision), the
# daemon's RSS after that load, the http load again with each audit record
# fsynced before its answer (--audit-sync-within 0), the same load against
# a server that judges nothing (.ci/floorserver, with and without an
# fsynced audit), and medians and ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
runs=${RUNS:-40}
load_seconds=${LOAD_SECONDS:-10}

say() { printf '\n== %s\n' "$*"; }
loud() { printf '\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n!!! %s\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n' "$*" >&2; }

if ! command -v hyperfine >/dev/null; then
	say "installing hyperfine"
	export DEBIAN_FRONTEND=noninteractive
	sudo=""
	[[ $(id -u) -eq 0 ]] || sudo=sudo
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq hyperfine
fi
for tool in go curl python3; do
	command -v "$tool" >/dev/null || { echo "bench-hook: $tool is required" >&2; exit 1; }
done

# cc-safety-net is installed here once and reused.
cache=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/narrowd-bench/npm
work=$(mktemp -d /tmp/narrowd-bench.XXXXXX)
chmod 700 "$work"
serve_pid=""
cleanup() {
	if [[ -n $serve_pid ]]; then
		kill "$serve_pid" 2>/dev/null || true
		wait "$serve_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
# Nothing from the user's own narrowd config or state is read or written.
export XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state XDG_RUNTIME_DIR=$work/run
mkdir -p "$work/config" "$work/state" "$work/run" "$work/ws/src"
chmod 700 "$work/run"

say "building"
go version
CGO_ENABLED=0 go build -o "$work/" ./cmd/narrowd ./cmd/narrowd-hook  # as the README builds them
# The default build on a machine with a C compiler: dynamically linked.
go build -o "$work/narrowd-cgo" ./cmd/narrowd
cat >"$work/floor.go" <<'EOF'
package main

import (
	"io"
	"os"
)

func main() {
	io.Copy(io.Discard, os.Stdin)
	os.Stdout.WriteString("{}\n")
}
EOF
(cd "$work" && CGO_ENABLED=0 GOFLAGS= go build -o floor floor.go)
ls -l "$work/narrowd" "$work/narrowd-hook" "$work/floor" | awk '{print $5, $NF}'

payload() { # name command
	python3 - "$1" "$2" "$work" <<'EOF'
import json, sys
name, cmd, work = sys.argv[1:]
p = {"session_id": "bench", "transcript_path": work + "/t.jsonl", "cwd": work + "/ws",
     "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
     "tool_input": {"command": cmd}, "tool_use_id": "toolu_" + name}
open(f"{work}/{name}.json", "w").write(json.dumps(p) + "\n")
EOF
}
payload ls 'ls -la src'
payload rm 'rm -rf ~/x'

say "starting narrowd serve"
port=$((20000 + RANDOM % 20000))
mport=$((port + 1))
sock=$work/run/narrowd.sock
"$work/narrowd" serve --socket "$sock" --http "127.0.0.1:$port" --metrics "127.0.0.1:$mport" \
	--state-dir "$work/state/narrowd" --audit-dir "$work/audit" --log-level warn 2>"$work/serve.log" &
serve_pid=$!
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.1; done
[[ -S $sock ]] || { cat "$work/serve.log" >&2; echo "bench-hook: the daemon did not start" >&2; exit 1; }
for p in ls rm; do
	printf '%s: ' "$p"; "$work/narrowd" hook --socket "$sock" claude <"$work/$p.json" | head -c 160; echo
done

say "cc-safety-net from npm"
ccsn=""
if command -v npm >/dev/null; then
	if [[ -x $cache/node_modules/.bin/cc-safety-net ]] ||
		timeout 300 npm install --silent --no-audit --no-fund --prefix "$cache" cc-safety-net >"$work/npm.log" 2>&1; then
		ccsn=$cache/node_modules/.bin/cc-safety-net
		echo "cc-safety-net $("$ccsn" --version 2>/dev/null | tr -d '\n') ($cache), node $(node --version)"
		for p in ls rm; do printf '%s: ' "$p"; "$ccsn" hook --coding-cli <"$work/$p.json" | head -c 160; echo; done
	else
		cat "$work/npm.log" >&2 || true
		loud "npm could not install cc-safety-net: the peer is NOT measured, no narrowd-vs-peer ratio below"
	fi
else
	loud "npm is not installed: cc-safety-net is NOT measured, no narrowd-vs-peer ratio below"
fi

say "hyperfine: one run, both payloads, every command (runs >= $runs each)"
# -N with an explicit `sh -c 'exec …'`: hyperfine 1.15 has no --input,
# and its subtraction of a measured shell start-up is unreliable on a
# noisy machine (medians near 0). Every command, the floor too, pays the
# same sh start-up and exec, so the floor is "sh + an empty Go binary".
sh_exec() { printf "sh -c 'exec %s'" "$1"; }
cmds=(
	"$(sh_exec "$work/floor < $work/{p}.json")"
	"$(sh_exec "$work/narrowd-hook --socket $sock claude < $work/{p}.json")"
	"$(sh_exec "$work/narrowd hook --socket $sock claude < $work/{p}.json")"
	"$(sh_exec "$work/narrowd-cgo hook --socket $sock claude < $work/{p}.json")"
	"$(sh_exec "$work/narrowd hook --socket $work/run/absent.sock claude < $work/{p}.json")"
	"$(sh_exec "curl -s --data-binary @$work/{p}.json http://127.0.0.1:$port/hook/claude")"
)
if [[ -n $ccsn ]]; then
	cmds+=("$(sh_exec "$ccsn hook --coding-cli < $work/{p}.json")")
fi
# The fallback exits 2 on some denies: exit codes are not failures.
hyperfine -N --warmup 3 --min-runs "$runs" --ignore-failure -L p ls,rm \
	--export-json "$work/hyperfine.json" "${cmds[@]}"

say "in-process Go benchmarks (./daemon)"
go test ./daemon -run '^$' -count 1 -benchtime 2s \
	-bench '^(BenchmarkJudgeInDaemon|BenchmarkHandle|BenchmarkHTTPRoundTrip|BenchmarkSocketRoundTrip|BenchmarkHandleParallel|BenchmarkSocketParallel)$' |
	tee "$work/gobench.txt"

say "load: 64 concurrent clients for ${load_seconds}s each, http keep-alive then shims over the Unix socket"
go build -o "$work/loadgen" ./.ci/loadgen
go build -o "$work/floorserver" ./.ci/floorserver
{
	echo "narrowd:"
	"$work/loadgen" -http "http://127.0.0.1:$port/hook/claude" -pid "$serve_pid" -c 64 -d "${load_seconds}s" "$work/ls.json" "$work/rm.json"
	"$work/loadgen" -socket "$sock" -pid "$serve_pid" -c 64 -d "${load_seconds}s" "$work/ls.json" "$work/rm.json"
	# The command corpus: 1,410 distinct commands instead of two, with
	# the tickets and snapshots they make the daemon take.
	"$work/loadgen" -http "http://127.0.0.1:$port/hook/claude" -pid "$serve_pid" -c 64 -d "${load_seconds}s" \
		-corpus testdata/corpus/commands.jsonl -cwd "$work/ws"
} | tee "$work/load.txt"
grep -E '^(VmRSS|VmHWM)' "/proc/$serve_pid/status" | tee "$work/rss.txt"

# The same http load against a daemon that fsyncs each audit record
# before it answers (--audit-sync-within 0) instead of at most 10 ms after.
sport=$((port + 3))
"$work/narrowd" serve --socket "$work/run2/narrowd.sock" --http "127.0.0.1:$sport" --metrics "" \
	--state-dir "$work/state2/narrowd" --audit-dir "$work/audit2" --log-level warn --audit-sync-within 0 2>"$work/serve2.log" &
strict_pid=$!
for _ in $(seq 100); do [[ -S $work/run2/narrowd.sock ]] && break; sleep 0.1; done
{
	echo "narrowd --audit-sync-within 0 (each record fsynced before its answer):"
	"$work/loadgen" -http "http://127.0.0.1:$sport/hook/claude" -pid "$strict_pid" -c 64 -d "${load_seconds}s" "$work/ls.json" "$work/rm.json"
} | tee -a "$work/load.txt"
kill "$strict_pid"; wait "$strict_pid" 2>/dev/null || true

# The throughput floor: the same clients against a server that judges
# nothing (read the request, answer an empty 200), then one that also
# appends and fsyncs each request with a group commit before answering,
# as the audit must. What this machine allows with the load generator on
# the same cores.
floor_load() { # label, extra flags
	local fport=$((port + 2)) fpid
	"$work/floorserver" -addr "127.0.0.1:$fport" "${@:2}" >/dev/null &
	fpid=$!
	sleep 0.3
	echo "$1:"
	"$work/loadgen" -http "http://127.0.0.1:$fport/hook/claude" -pid "$fpid" -c 64 -d "${load_seconds}s" "$work/ls.json" "$work/rm.json"
	kill "$fpid"; wait "$fpid" 2>/dev/null || true
}
# On a virtual disk each byte fsynced costs the writer CPU, so the last
# floor appends lines as long as narrowd's audit records were in the
# loads above.
record_bytes=$(cat "$work"/audit/*.jsonl | awk '{n++; b += length($0) + 1} END {if (n) printf "%d", b / n; else print 0}')
{
	floor_load "floor (no judging, no audit)"
	floor_load "floor with an fsynced group commit" -fsync "$work/floor.jsonl"
	rm -f "$work/floor.jsonl"
	floor_load "floor with an fsynced group commit of ${record_bytes}-byte lines (narrowd's mean audit record)" -fsync "$work/floor.jsonl" -line "$record_bytes"
} | tee -a "$work/load.txt"

say "summary"
python3 - "$work" <<'EOF'
import json, re, sys
work = sys.argv[1]
def name(cmd):
    who = ("fallback" if "absent.sock" in cmd else "shim" if "narrowd hook --socket " in cmd else
           "small" if "narrowd-hook --socket " in cmd else
           "shim-cgo" if "narrowd-cgo hook" in cmd else
           "floor" if "/floor <" in cmd else "curl" if "exec curl" in cmd else
           "ccsn" if "cc-safety-net" in cmd else "?")
    return who + (" ls" if "/ls.json" in cmd else " rm")
res = {name(r["command"]): r for r in json.load(open(work + "/hyperfine.json"))["results"]}
def med(name): return res[name]["median"] * 1e3 if name in res else None
def p99(name):
    t = sorted(res[name]["times"]); return t[min(len(t) - 1, int(len(t) * 0.99))] * 1e3
print("per-call wall time, milliseconds (hyperfine -N, each command run as sh -c 'exec ...'):")
print(f"  {'':10} {'payload':8} {'median':>8} {'p99':>8}")
for who in ["floor", "small", "shim", "shim-cgo", "fallback", "curl", "ccsn"]:
    for p in ["ls", "rm"]:
        n = f"{who} {p}"
        if n in res:
            print(f"  {who:10} {p:8} {med(n):8.1f} {p99(n):8.1f}")
print("ratios of medians (per payload):")
for p in ["ls", "rm"]:
    f, sm, s, c, fb = med(f"floor {p}"), med(f"small {p}"), med(f"shim {p}"), med(f"ccsn {p}"), med(f"fallback {p}")
    line = (f"  {p}: small/floor {sm / f:.2f}x (small - floor {sm - f:.1f} ms), shim/floor {s / f:.2f}x (shim - floor {s - f:.1f} ms), "
            f"shim-cgo/floor {med(f'shim-cgo {p}') / f:.2f}x, fallback/floor {fb / f:.2f}x")
    if c is not None:
        line += f"; narrowd faster than cc-safety-net: small {c / sm:.1f}x, shim {c / s:.1f}x, fallback {c / fb:.1f}x"
    else:
        line += ", cc-safety-net NOT MEASURED"
    print(line)
bench = open(work + "/gobench.txt").read()
m = re.search(r"BenchmarkJudgeInDaemon\S*\s+\d+\s+(\d+) ns/op\s+(\d+) p50-ns\s+(\d+) p99-ns", bench)
if m:
    print(f"in-daemon decision (BenchmarkJudgeInDaemon): mean {int(m[1])/1e3:.1f} us, p50 {int(m[2])/1e3:.1f} us, p99 {int(m[3])/1e3:.1f} us")
for mode, what in [("sync-after", "record written, fsynced after the answer (default)"), ("sync-before", "record fsynced before the answer")]:
    m = re.search(r"BenchmarkHTTPRoundTrip/" + mode + r"\S*\s+\d+\s+(\d+) ns/op", bench)
    if m:
        print(f"http hook round trip in-process (BenchmarkHTTPRoundTrip, keep-alive, {what}): {int(m[1])/1e3:.0f} us/op")
for name in ["BenchmarkHandleParallel", "BenchmarkSocketParallel"]:
    m = re.search(name + r"\S*\s+\d+\s+(\d+) ns/op", bench)
    if m:
        print(f"{name}: {1e9/int(m[1]):.0f} decisions/s")
print("load generator (the daemon's CPU per decision does not depend on what else runs):")
for line in open(work + "/load.txt").read().strip().splitlines():
    print("  " + line)
print("daemon memory after the load:", " ".join(open(work + "/rss.txt").read().split()))
EOF
