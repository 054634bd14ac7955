#!/usr/bin/env bash
# Figures for issue 16 item 2: what keeping every workspace change of a
# sandboxed run for `narrowd undo` costs, for the two designs, on a small
# repository, a `go test`-sized tree and an `npm test`-sized tree
# (node_modules-like: 30,000 files). Not run by CI: the numbers depend on
# the machine and its file system (reflinks make B's clone cheap on
# btrfs/XFS; on ext4 it is a full copy).
#
#   .ci/bench-undo.sh              # 5 runs per figure, medians
#   RUNS=9 BENCH_DIR=/path/on/the/workspace/fs .ci/bench-undo.sh
#
# (A) overlay: the sandbox mounts an overlay over the workspace (upper
#     layer in narrowd's state); after the run narrowd reads the upper
#     layer and moves its changes in, the originals moved into the store.
# (B) copies before the run: the whole writable tree is cloned
#     (cp -a --reflink=auto) into the store before every run, and compared
#     with the tree after it.
# Needs unshare and an unprivileged overlay (userxattr, Linux 5.11+).
set -euo pipefail
cd "$(dirname "$0")/.."
export NARROWD_MEASURE_UNDO=1 RUNS=${RUNS:-5}
[[ -n ${BENCH_DIR:-} ]] && export BENCH_DIR
exec go test -count=1 -timeout 60m -run '^TestMeasureUndo$' -v ./sandbox/changes/ | grep -v -e '^=== RUN' -e '^--- ' -e '^PASS' -e '^ok '
