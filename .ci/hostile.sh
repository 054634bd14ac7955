#!/usr/bin/env bash
# hostile.sh prints what the worst payloads cost the engine: for each
# hostile shape (deep nests, long lists, the 4 MiB payload limit) the
# verdict, its size, the time and the bytes allocated, in-process; then
# the whole `narrowd check` process's wall time and peak RSS for the
# shapes the issue reported.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^TestHostileCommandsBounded$' -v -count=1 ./daemon/ | grep 'budget_test' | sed 's/^ *budget_test.go:[0-9]*: //' | sort
bin=$(mktemp -d)/narrowd
go build -o "$bin" ./cmd/narrowd
python3 - "$bin" <<'PY'
import json, subprocess, sys, resource, time
bin = sys.argv[1]
shapes = {
    "pipeline 500k stages": " | ".join(["a"] * 500_000),
    "nest of $( 60 KB": "$(" * 20_000 + "x" + ")" * 20_000,
    'nest of "$(echo 120 KB': '"$(echo ' * 15_000 + "x" + ')"' * 15_000,
    "a; to 1 MB": "a;" * 500_000,
}
for name, cmd in shapes.items():
    p = json.dumps({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                    "tool_input": {"command": cmd}, "cwd": "/tmp", "transcript_path": "/tmp/t"})
    t0 = time.time()
    r = subprocess.run(["/usr/bin/time", "-f", "%e %M", bin, "check"], input=p.encode(), capture_output=True)
    wall, rss = r.stderr.decode().strip().splitlines()[-1].split()
    out = json.loads(r.stdout)
    print(f"{name:28s} {len(cmd):>8d} bytes  {out['decision']['outcome']:5s}  verdict {len(r.stdout):>6d} bytes  "
          f"process {float(wall)*1000:.0f} ms  peak RSS {int(rss)//1024} MiB")
PY
