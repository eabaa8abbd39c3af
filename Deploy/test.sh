#!/usr/bin/env bash
# Runs the whole test suite on this machine: installs what is missing (Debian packages,
# Python tooling), starts a PostgreSQL and a RabbitMQ of this run's own, builds, runs the
# emulator's own tests and then `swift test`.
# This is the README's test command and what CI runs.
#
# Every run creates its services from nothing: a state directory, ports and a RabbitMQ node
# name of its own, removed when the run ends (pass or fail). So no database, queue or file
# left by an earlier run, by `Deploy/cluster.sh` or by another checkout can make a test pass,
# and a running local cluster is never disturbed. Only Debian packages and the Python virtual
# environments ($PUSHD_CACHE_DIR) are kept between runs. After the tests, anything they left
# on the servers (queues, scratch databases) fails the run.
#
# Environment: PUSHD_KEEP_TEST_STATE=1 keeps the run's state directory (and stops nothing) for
# inspection; its path is printed.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$PUSHD_REPO"

ensure_build_dependencies
command -v javac >/dev/null || ensure_debian_packages default-jdk-headless
ensure_tooling_venv

# ---------------------------------------------------------------- this run's own services
RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/pushd-test.XXXXXX")
chmod 0755 "$RUN_DIR"  # PostgreSQL runs as 'postgres' when we are root and must reach its data
RUN_ID=$(tr 'A-Z' 'a-z' <<<"${RUN_DIR##*.}")
# The operations stage's three-node cluster derives its ports from these: AMQP port
# +100/+200/+300 (and +2 for rabbitmq_prometheus), distribution port +100/+200/+300.
mapfile -t ports < <(free_ports 3 0,1,2,100,101,102,200,201,202,300,301,302)
export PUSHD_STATE_DIR="$RUN_DIR/services"
export PUSHD_PG_PORT=${ports[0]} PUSHD_AMQP_PORT=${ports[1]} PUSHD_AMQP_DIST_PORT=${ports[2]}
export PUSHD_RABBITMQ_NODENAME="pushd-test-$RUN_ID@localhost"
LOG_DIR="$PUSHD_REPO/.build/test-logs"
mkdir -p "$LOG_DIR" "$RUN_DIR/tmp"

# Stops the services (also when a fault test restarted one of them), then whatever the tests
# started and did not stop (children of a crashed test process carry PUSHD_TEST_RUN in their
# environment), then removes the run's state.
finish() {
    if [ "${PUSHD_KEEP_TEST_STATE:-0}" = 1 ]; then
        log "kept this run's services and state in $RUN_DIR ($(bash Deploy/local/services.sh env | tr '\n' ' '))"
        return
    fi
    bash Deploy/local/services.sh reset >"$RUN_DIR/reset.log" 2>&1 \
        || { cat "$RUN_DIR/reset.log" >&2; log "services.sh reset failed; removing $RUN_DIR anyway"; }
    local pid
    for pid in $(grep -lsz "^PUSHD_TEST_RUN=$RUN_ID\$" /proc/[0-9]*/environ | cut -d/ -f3); do
        [ "$pid" != "$$" ] && kill -KILL "$pid" 2>/dev/null || true
    done
    rm -rf -- "$RUN_DIR"
}
trap finish EXIT

log "starting PostgreSQL and RabbitMQ for this run only (state $RUN_DIR, ports $PUSHD_PG_PORT/$PUSHD_AMQP_PORT)"
bash Deploy/local/services.sh start
eval "$(bash Deploy/local/services.sh env)"

# What the servers hold before any test: the baseline against which leftovers are found.
server_objects() {
    bash Deploy/local/services.sh rabbitmqctl list_queues --silent --no-table-headers name | sed 's/^/queue /'
    bash Deploy/local/services.sh rabbitmqctl list_exchanges --silent --no-table-headers name | sed 's/^/exchange /'
    bash Deploy/local/services.sh psql -XAtqc 'SELECT datname FROM pg_database' | sed 's/^/database /'
}
server_objects | sort > "$RUN_DIR/before.txt"

# Tests and everything they start run with the run's marker and its private temporary directory.
export PUSHD_TEST_RUN=$RUN_ID
export TMPDIR="$RUN_DIR/tmp"

log "wire contract tests: Schemas/sql (a scratch database of their own) and every Schemas example against its schema"
bash Schemas/sql/tests/run.sh | tail -n 2
bash Schemas/tests/check-examples.sh | tail -n 2

log "emulator tests (pytest)"
bash Deploy/emulator/test.sh -q 2>&1 | tail -n 3

log "building"
swift build --build-tests 2>&1 | tail -n 3
# Two runs: everything else, then the fault tests alone (they restart this run's PostgreSQL
# and RabbitMQ, which would disturb tests running beside them).
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
# A failed stage shows what the servers said while it ran: the run's state (and so their
# logs) is removed when the run ends, and a failure seen only in CI must be explainable.
server_complaints() {  # label
    local label=$1 lines
    lines=$(grep -hE '\[(error|warning)\]' "$PUSHD_STATE_DIR"/rabbitmq/log/*.log 2>/dev/null \
        | grep -vE 'connection_forced|client unexpectedly closed TCP connection|segment_writer' | tail -n 60 | cut -c1-400)
    [ -n "$lines" ] && { log "RabbitMQ's errors and warnings up to the end of the $label (last 60):"; echo "$lines" >&2; }
    lines=$(grep -hE 'ERROR|FATAL|PANIC' "$PUSHD_STATE_DIR"/pg-log/postgresql.log 2>/dev/null | tail -n 30 | cut -c1-400)
    [ -n "$lines" ] && { log "PostgreSQL's errors up to the end of the $label (last 30):"; echo "$lines" >&2; }
    return 0
}
run_tests "all but the fault tests" "$LOG_DIR/test-run.log" --no-parallel --skip FaultTests || { status=1; server_complaints "main stage"; }
PUSHD_FAULT_TESTS=1 run_tests "fault tests" "$LOG_DIR/fault-test-run.log" --filter FaultTests --skip ClusterFaultTests \
    || { status=1; server_complaints "fault stage"; }

# ---- operations stage (issue 15): Prometheus rules, dashboard, RabbitMQ cluster fault test.
source Deploy/test-operations.sh
run_operations_stage || status=1
# ---- end of the operations stage

# ---------------------------------------------------------------- nothing left behind
# Queues, exchanges and databases the tests created and did not remove, pass or fail.
server_objects | sort > "$RUN_DIR/after.txt"
leftovers=$(comm -13 "$RUN_DIR/before.txt" "$RUN_DIR/after.txt")
if [ -n "$leftovers" ]; then
    log "the tests left $(wc -l <<<"$leftovers") objects on the servers:"
    head -n 20 <<<"$leftovers" >&2
    status=1
else
    log "the tests left no queue, exchange or database behind"
fi

echo "swift test: $passed_total passed, $failed_total failed"
exit "$status"
