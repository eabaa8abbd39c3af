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
# Uses log, ensure_debian_packages (lib.sh), run_tests and $PUSHD_PYTHON (test.sh).

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
        PUSHD_AMQP_URL=${PUSHD_CLUSTER_AMQP_URLS%%,*} PUSHD_CLUSTER_TESTS=1 \
            run_tests "cluster fault tests" "$PUSHD_STATE_DIR/last-cluster-test-run.log" --filter ClusterFaultTests || status=1
        echo "$passed_total $failed_total" > "$PUSHD_STATE_DIR/.cluster-test-counts"
        exit "$status"
    ) || failed=1
    # run_tests counted in the subshell: carry its totals back.
    if [ -f "$PUSHD_STATE_DIR/.cluster-test-counts" ]; then
        read -r passed_total failed_total < "$PUSHD_STATE_DIR/.cluster-test-counts"
        rm -f "$PUSHD_STATE_DIR/.cluster-test-counts"
    fi
    bash Deploy/local/services.sh cluster-stop || true
    return "$failed"
}
