#!/usr/bin/env bash
# Runs the whole test suite on this machine: installs what is missing (Debian packages,
# Python tooling), starts the private PostgreSQL and RabbitMQ the integration tests talk to,
# builds, runs the emulator's own tests and then `swift test`.
# This is the README's test command and what CI runs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$PUSHD_REPO"

ensure_build_dependencies
command -v javac >/dev/null || ensure_debian_packages default-jdk-headless
ensure_tooling_venv

log "starting PostgreSQL and RabbitMQ (private, loopback)"
bash Deploy/local/services.sh start
eval "$(bash Deploy/local/services.sh env)"

log "emulator tests (pytest)"
bash Deploy/emulator/test.sh -q 2>&1 | tail -n 3

log "building"
swift build --build-tests 2>&1 | tail -n 3
# Two runs: everything else, then the fault tests alone (they restart the shared
# PostgreSQL and RabbitMQ, which would disturb tests running beside them).
run_tests() {  # label, log file, swift test arguments…
    local label=$1 log_file=$2; shift 2
    log "running swift test ($label)"
    set +e
    swift test --skip-build "$@" >"$log_file" 2>&1
    local status=$?
    set -e
    # Show failures and summaries, not one line per passing test.
    grep -vE '^(◇ |↳ |✔ Test ")|^\[|Executed 0 tests|Test Suite .*(started|passed) at' "$log_file" || true
    local summary total failed
    summary=$(grep -E 'Test run with [0-9]+ tests' "$log_file" | tail -n 1)
    total=$(sed -nE 's/.*Test run with ([0-9]+) tests.*/\1/p' <<<"$summary")
    failed=$(grep -cE '^✘ Test ".*failed after' "$log_file" || true)
    if [ -z "$total" ]; then
        log "swift test ($label) printed no summary (exit $status): see $log_file"
        return 1
    fi
    passed_total=$((passed_total + total - failed))
    failed_total=$((failed_total + failed))
    return "$status"
}
passed_total=0 failed_total=0 status=0
# One test at a time (about 2 minutes instead of 1): the integration suites start servers,
# workers and emulators, and on a 2-core machine running them side by side turns timing
# margins into flakes.
run_tests "all but the fault tests" "$PUSHD_STATE_DIR/last-test-run.log" --no-parallel --skip FaultTests || status=1
PUSHD_FAULT_TESTS=1 run_tests "fault tests" "$PUSHD_STATE_DIR/last-fault-test-run.log" --filter FaultTests --skip ClusterFaultTests || status=1
# ---- operations stage (issue 15): Prometheus rules, dashboard, RabbitMQ cluster fault test.
source Deploy/test-operations.sh
run_operations_stage || status=1
# ---- end of the operations stage
echo "swift test: $passed_total passed, $failed_total failed"
exit "$status"
