#!/usr/bin/env bash
# The generative oracle's long run (issue 15, item 6): calls generated
# from the knowledge table, judged under the standard profile, every
# allowed one run for real under strace in a confined hostile world.
# It prints calls generated, judged, allowed, executed and violations by
# class, then the violations themselves, and fails when there are any
# (known ones included: this run is strict).
#
#   ORACLE_SEED=7 ORACLE_COUNT=20000 .ci/oracle.sh
#
# ORACLE_SEED      generator seed (default: 1)
# ORACLE_COUNT     generated calls to judge (default: 10000; 0 = every one)
# ORACLE_PARALLEL  sandboxes at once (default: 2)
# ORACLE_STRICT    0 lets known classes (internal/oracle/testdata/known_violations.txt) pass
#
# Needs strace and util-linux (unshare, nsenter), and root or user
# namespaces. The commands run as nobody with no network over a
# read-only root; see internal/oracle/sandbox_test.go.
set -euo pipefail
cd "$(dirname "$0")/.."

export ORACLE_SEED="${ORACLE_SEED:-1}"
export ORACLE_COUNT="${ORACLE_COUNT:-10000}"
export ORACLE_PARALLEL="${ORACLE_PARALLEL:-2}"
export ORACLE_STRICT="${ORACLE_STRICT:-1}"
export NARROWD_E2E_REQUIRE=1
report=$(mktemp /tmp/narrowd-oracle-report.XXXXXX)
trap 'rm -f "$report"' EXIT
export ORACLE_REPORT="$report"

status=0
go test -count=1 -timeout 0 -run '^TestOracle$' ./internal/oracle >/dev/null 2>&1 || status=$?
if [[ ! -s "$report" ]]; then
	echo "oracle: no report; rerunning verbosely" >&2
	go test -count=1 -timeout 0 -run '^TestOracle$' -v ./internal/oracle
	exit 1
fi
cat "$report"
exit "$status"
