# Deploy/prometheus/local.sh — Prometheus for the local cluster (Deploy/cluster.sh --prometheus).
# Sourced; uses log and ensure_debian_packages from Deploy/lib.sh.
#
#   start_local_prometheus DIR PORT WORKERS CLEANUP BROKER
#       DIR      run directory (config, rules, targets, TSDB, log, pid file)
#       PORT     Prometheus's own port on 127.0.0.1
#       WORKERS  comma-separated host:port of the workers' metrics endpoints
#       CLEANUP  host:port of the cleanup consumer's
#       BROKER   host:port of rabbitmq_prometheus (services.sh with PUSHD_RABBITMQ_PROMETHEUS=1)
#   await_prometheus_scrape_after PORT EPOCH_SECONDS
#       waits (bounded) until every pushd target has been scraped after that time, so the
#       figures read next include everything that happened before it.
#
# The production scrape configuration and rules are used unchanged except for the intervals
# (2 s instead of 15 s: a demo batch lasts seconds) and the targets (file_sd, written here).

start_local_prometheus() {
    local dir=$1 port=$2 workers=$3 cleanup=$4 broker=$5
    ensure_debian_packages prometheus
    mkdir -p "$dir/targets" "$dir/rules"
    sed -e 's/^\(  scrape_interval:\).*/\1 2s/' -e 's/^\(  evaluation_interval:\).*/\1 2s/' \
        Deploy/prometheus/prometheus.yml > "$dir/prometheus.yml"
    cp Deploy/prometheus/rules/*.yml "$dir/rules/"
    python3 - "$dir/targets" "$workers" "$cleanup" "$broker" <<'PY'
import json, sys
out, workers, cleanup, broker = sys.argv[1:]
for name, targets in (("pushd-worker", workers.split(",")), ("pushd-cleanup", [cleanup]), ("rabbitmq", [broker])):
    with open(f"{out}/{name}.json", "w") as f:
        json.dump([{"targets": targets, "labels": {}}], f)
PY
    promtool check config "$dir/prometheus.yml" >/dev/null || { log "promtool rejects $dir/prometheus.yml"; return 1; }
    prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
        --storage.tsdb.retention.time=2d --web.listen-address="127.0.0.1:$port" \
        >"$dir/prometheus.log" 2>&1 </dev/null &
    echo $! > "$dir/../prometheus.pid"
    local deadline=$((SECONDS + 60))
    until curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null; do
        if ! kill -0 "$(cat "$dir/../prometheus.pid")" 2>/dev/null || (( SECONDS >= deadline )); then
            log "Prometheus did not start: $dir/prometheus.log"; tail -n 20 "$dir/prometheus.log" >&2; return 1
        fi
        sleep 0.2
    done
    log "Prometheus on http://127.0.0.1:$port (targets: workers $workers, cleanup $cleanup, broker $broker)"
}

await_prometheus_scrape_after() {
    local port=$1 after=$2 deadline=$((SECONDS + 30))
    while (( SECONDS < deadline )); do
        # The oldest last-scrape time among the pushd targets.
        local oldest
        oldest=$(curl -sf "http://127.0.0.1:$port/api/v1/query" \
            --data-urlencode 'query=min(timestamp(up{job=~"pushd-worker|pushd-cleanup"}))' \
            | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)' 2>/dev/null || echo 0)
        python3 -c "import sys; sys.exit(0 if float('$oldest') > float('$after') else 1)" && return 0
        sleep 0.5
    done
    log "Prometheus has not scraped every target since the batch ended; figures may lag"
}
