#!/usr/bin/env bash
# Benchmarks that need the emulator running; prints figures, asserts nothing.
#
#   bash Deploy/bench.sh apns        pushd's APNs client vs the emulator's h2load ceiling
#   bash Deploy/bench.sh crypto      envelopes/s vs raw RSA-OAEP (no servers needed)
#   bash Deploy/bench.sh pipeline    end to end: queued jobs → pushes accepted, CPU per delivery,
#                                    peak memory, and the aioapns peer sender (see its help)
#   bash Deploy/bench.sh instructions [--baseline OTHER_PUSHD] [--small N] [--large N]
#                                    a worker's instructions per delivery under callgrind (valgrind),
#                                    deterministic where CPU time here is not (bench/instructions.py)
#   bash Deploy/bench.sh cluster [--jobs N]
#                                    the issue's own measure: the main job (Deploy/cluster.sh) plus N
#                                    more demo jobs (1000), the two workers' CPU over their whole
#                                    lives per push answered (bench/cluster_cpu.py); stops the cluster
#
# The emulator runs with two processes on a free port (in fast mode for `apns`).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$PUSHD_REPO"
what=${1:-apns}; shift || true

ensure_build_dependencies
command -v h2load >/dev/null || ensure_debian_packages nghttp2-client
# PUSHD_BINARY runs another build instead (to compare two versions on the same machine).
if [ -n "${PUSHD_BINARY:-}" ]; then
    PUSHD=$PUSHD_BINARY
    use_static_backtracer
else
    build_release_pushd
    PUSHD="$PUSHD_REPO/.build/release/pushd"
fi

if [ "$what" = "crypto" ]; then exec "$PUSHD" bench crypto "$@"; fi
if [ "$what" = "cluster" ]; then
    if [ -n "${PUSHD_BINARY:-}" ]; then
        echo "cluster: Deploy/cluster.sh builds and runs this checkout; PUSHD_BINARY is not used there" >&2
        exit 64
    fi
    jobs=1000
    while [ $# -gt 0 ]; do
        case "$1" in
            --jobs) jobs=${2:-}; shift $(( $# > 1 ? 2 : 1 )) ;;
            *) echo "cluster: unknown option $1 (--jobs N)" >&2; exit 64 ;;
        esac
    done
    [[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "cluster: --jobs needs a positive number of jobs" >&2; exit 64; }
    # The main job as the README runs it (its own build, emulator and servers), then the
    # extra jobs; the cluster is stopped afterwards, since this script started it.
    trap 'bash Deploy/cluster.sh stop >/dev/null 2>&1 || true' EXIT
    bash Deploy/cluster.sh >"$PUSHD_STATE_DIR/bench-cluster.log" 2>&1 \
        || { tail -n 20 "$PUSHD_STATE_DIR/bench-cluster.log" >&2; exit 1; }
    services_env=$(bash Deploy/local/services.sh env)  # a failure stops here (set -e), not at the enqueue
    eval "$services_env"
    python3 Deploy/bench/cluster_cpu.py "$PUSHD_REPO/.build/release/pushd" "$PUSHD_STATE_DIR/cluster" "$jobs"
    exit
fi

BENCH="$PUSHD_STATE_DIR/bench"
mkdir -p "$BENCH"
source Deploy/emulator/venv.sh
ensure_venv Deploy/emulator/requirements.txt
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# Keeps existing keys; points the service account's token_uri at this run's port.
"$EMULATOR_VENV/bin/python" Deploy/emulator/make_credentials.py \
    --out "$BENCH/credentials" --bundle com.example.app --port "$port" >/dev/null
# Fast mode keeps counts only; the pipeline benchmark needs each push's arrival time.
mode=--fast; [ "$what" = "pipeline" ] || [ "$what" = "instructions" ] && mode=""
bash Deploy/emulator/run.sh $mode --workers 2 --port "$port" --admin-port 0 --state-dir "$BENCH/emulator" \
    --config "$BENCH/credentials/emulator-config.json" >"$BENCH/emulator.out" 2>"$BENCH/emulator.log" </dev/null &
emulator=$!
trap 'kill -TERM $emulator 2>/dev/null; wait $emulator 2>/dev/null || true' EXIT
for _ in $(seq 1 150); do [ -s "$BENCH/emulator.out" ] && break; sleep 0.1; done

case "$what" in
    apns)
        "$PUSHD" bench apns --url "https://127.0.0.1:$port" --ca-file "$BENCH/emulator/ca.pem" \
            --p8 "$BENCH/credentials/AuthKey_KEYID12345.p8" "$@"
        ;;
    pipeline)
        bash Deploy/local/services.sh start >/dev/null
        eval "$(bash Deploy/local/services.sh env)"
        "$PUSHD" migrate >/dev/null  # a fresh machine's database has no schema yet
        ensure_tooling_venv  # the aioapns peer sender
        "$PUSHD" bench pipeline --peer-python "$PUSHD_PYTHON" --peer-script "$PUSHD_REPO/Deploy/bench/aioapns_peer.py" \
            --emulator-url "https://127.0.0.1:$port" --ca-file "$BENCH/emulator/ca.pem" \
            --credentials "$BENCH/credentials" --emulator-admin "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["admin_url"])' "$BENCH/emulator.out")" "$@"
        ;;
    instructions)
        # Instructions per delivery under callgrind: two backlog drains of different sizes
        # per build, so what does not grow with deliveries cancels out. Deterministic where
        # CPU time on this VM is not; see Deploy/bench/instructions.py for what it leaves out.
        command -v valgrind >/dev/null || ensure_debian_packages valgrind
        bash Deploy/local/services.sh start >/dev/null
        eval "$(bash Deploy/local/services.sh env)"
        "$PUSHD" migrate >/dev/null
        small=2000 large=12000 baseline=""
        while [ $# -gt 0 ]; do
            case "$1" in
                --small) small=$2; shift 2 ;;
                --large) large=$2; shift 2 ;;
                --baseline) baseline=$2; shift 2 ;;
                *) echo "instructions: unknown option $1 (--small N, --large N, --baseline OTHER_PUSHD)" >&2; exit 64 ;;
            esac
        done
        admin=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["admin_url"])' "$BENCH/emulator.out")
        report=("$small" "$large")
        for build in this ${baseline:+baseline}; do
            binary=$PUSHD; [ "$build" = baseline ] && binary=$baseline
            # valgrind cannot read the DWARF 5 of a Swift build: a copy without it (the symbols stay).
            objcopy --strip-debug "$binary" "$BENCH/pushd-$build"
            files=()
            for deliveries in "$small" "$large"; do
                rm -f "$BENCH/callgrind.$build.$deliveries".*
                PUSHD_BENCH_WORKER_WRAPPER="valgrind --tool=callgrind --callgrind-out-file=$BENCH/callgrind.$build.$deliveries.%p" \
                    "$BENCH/pushd-$build" bench pipeline --emulator-url "https://127.0.0.1:$port" --ca-file "$BENCH/emulator/ca.pem" \
                    --credentials "$BENCH/credentials" --emulator-admin "$admin" --only backlog --backlog "$deliveries" \
                    >"$BENCH/instructions.$build.$deliveries.log" 2>&1 \
                    || { tail -n 20 "$BENCH/instructions.$build.$deliveries.log" >&2; exit 1; }
                files+=("$(ls "$BENCH/callgrind.$build.$deliveries".* | head -n 1)")
            done
            report+=("$build" "${files[@]}")
        done
        python3 Deploy/bench/instructions.py report "${report[@]}"
        ;;
    *) echo "unknown benchmark $what (apns, cluster, crypto, instructions, pipeline)" >&2; exit 64 ;;
esac
