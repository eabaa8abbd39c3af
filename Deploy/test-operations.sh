# Deploy/test-operations.sh — the operations stage of Deploy/test.sh (issue 15). Sourced by
# test.sh after its Swift runs; defines run_operations_stage, which returns non-zero if any
# check failed:
#   1. promtool check config / check rules / test rules on Deploy/prometheus (Debian's
#      `prometheus` package, installed here if missing);
#   2. a three-node RabbitMQ cluster (services.sh cluster-start), and against it
#   3. the dashboard check (Deploy/prometheus/check_dashboard.py: a real Prometheus parses
#      every expression, a real worker and rabbitmq_prometheus export every name), and
#   4. the cluster fault test (swift test --filter ClusterFaultTests), with the workers given
#      every node's URL; then the cluster is stopped.
# Uses log, ensure_debian_packages (lib.sh) and $PUSHD_PYTHON; adds its Swift test counts to
# test.sh's passed_total / failed_total.

run_operations_stage() {
    local failed=0
    ensure_debian_packages prometheus
    log "promtool: Prometheus configuration, rules and rule unit tests"
    promtool check config Deploy/prometheus/prometheus.yml >/dev/null || { log "promtool check config failed"; failed=1; }
    promtool check rules Deploy/prometheus/rules/*.yml >/dev/null || { log "promtool check rules failed"; failed=1; }
    promtool test rules Deploy/prometheus/tests/*.yml || { log "promtool test rules failed"; failed=1; }

    log "starting a three-node RabbitMQ cluster (private, loopback)"
    local t0=$SECONDS
    if ! bash Deploy/local/services.sh cluster-start; then
        log "the RabbitMQ cluster did not start"
        bash Deploy/local/services.sh cluster-stop || true
        return 1
    fi
    log "cluster up in $((SECONDS - t0))s"
    (
        eval "$(bash Deploy/local/services.sh cluster-env)"
        local status=0
        log "dashboard: every expression parsed by Prometheus, every metric exported"
        "$PUSHD_PYTHON" Deploy/prometheus/check_dashboard.py --pushd .build/debug/pushd || status=1
        # The fixture's own connection (topology, publishing) goes to node 1; the workers get
        # every node (PUSHD_CLUSTER_AMQP_URLS).
        log "running swift test (cluster fault tests)"
        local log_file="$LOG_DIR/cluster-test-run.log"
        PUSHD_AMQP_URL=${PUSHD_CLUSTER_AMQP_URLS%%,*} PUSHD_CLUSTER_TESTS=1 \
            swift test --skip-build --filter ClusterFaultTests >"$log_file" 2>&1 || status=1
        grep -E '^(✘|✔ Test run|✘ Test run)|Expectation failed|recorded an issue' "$log_file" || true
        # "Test run with 1 test in 1 suite passed" (one test: singular).
        local total failed_cases
        total=$(sed -nE 's/.*Test run with ([0-9]+) tests? .*/\1/p' "$log_file" | tail -n 1)
        failed_cases=$(grep -cE '^✘ Test ".*failed after' "$log_file" || true)
        if [ -z "$total" ] || [ "$total" -eq 0 ]; then
            log "swift test (cluster fault tests) ran nothing (exit status kept): see $log_file"
            status=1
        fi
        echo "$(( ${total:-0} - failed_cases )) $failed_cases" > "$PUSHD_STATE_DIR/.cluster-test-counts"
        exit "$status"
    ) || failed=1
    # Counted in the subshell (it holds the cluster's environment): add to test.sh's totals.
    if [ -f "$PUSHD_STATE_DIR/.cluster-test-counts" ]; then
        local passed_here failed_here
        read -r passed_here failed_here < "$PUSHD_STATE_DIR/.cluster-test-counts"
        rm -f "$PUSHD_STATE_DIR/.cluster-test-counts"
        passed_total=$(( ${passed_total:-0} + passed_here ))
        failed_total=$(( ${failed_total:-0} + failed_here ))
    fi
    bash Deploy/local/services.sh cluster-stop || true
    return "$failed"
}
