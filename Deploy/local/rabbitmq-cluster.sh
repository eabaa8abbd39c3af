# Deploy/local/rabbitmq-cluster.sh — a three-node RabbitMQ cluster on loopback, and the
# rabbitmq_prometheus endpoint. Sourced by services.sh (it reuses rmq_env, rmq_prepare, rmqctl,
# rmq_await, which act on whichever node the globals RMQ_NODE/AMQP_PORT/DIST_PORT/RMQ_BASE/
# RMQ_HOME/RMQ_PID_FILE name); not run on its own.
#
# Node i (1..PUSHD_RABBITMQ_CLUSTER_SIZE, default 3) of the cluster:
#   name        <name>-i@localhost, from PUSHD_RABBITMQ_NODENAME=<name>@localhost
#   AMQP        PUSHD_AMQP_PORT + 100*i       (55672 -> 55772, 55872, 55972)
#   Erlang dist distribution port of the single node + 100*i
#   prometheus  PUSHD_AMQP_PORT + 100*i + 2   (rabbitmq_prometheus, /metrics, 127.0.0.1)
#   state       $PUSHD_STATE_DIR/rabbitmq-cluster/node-i, one HOME (one Erlang cookie) for all
# The single node of `services.sh start` is a different node with its own state: both can run
# at once (the cluster fault tests run beside the other suites' node).

CLUSTER_SIZE=${PUSHD_RABBITMQ_CLUSTER_SIZE:-3}
[[ "$CLUSTER_SIZE" =~ ^[1-9]$ ]] || die "PUSHD_RABBITMQ_CLUSTER_SIZE must be 1..9, got '$CLUSTER_SIZE'"
CLUSTER_BASE=$STATE_DIR/rabbitmq-cluster
CLUSTER_NAME=${RMQ_NODE%@localhost}
SINGLE_AMQP_PORT=$AMQP_PORT
SINGLE_DIST_PORT=$DIST_PORT
# The single node's prometheus endpoint (PUSHD_RABBITMQ_PROMETHEUS=1).
PROMETHEUS_PORT=${PUSHD_RABBITMQ_PROMETHEUS_PORT:-$((AMQP_PORT + 2))}

cluster_node_name() { echo "$CLUSTER_NAME-$1@localhost"; }
cluster_amqp_port() { echo $((SINGLE_AMQP_PORT + 100 * $1)); }
cluster_prometheus_port() { echo $((SINGLE_AMQP_PORT + 100 * $1 + 2)); }

# Points rmq_env, rmqctl and friends at cluster node $1.
cluster_select() {
    local i=$1
    RMQ_NODE=$(cluster_node_name "$i")
    AMQP_PORT=$(cluster_amqp_port "$i")
    DIST_PORT=$((SINGLE_DIST_PORT + 100 * i))
    RMQ_BASE=$CLUSTER_BASE/node-$i
    RMQ_HOME=$CLUSTER_BASE/home
    RMQ_PID_FILE=$RMQ_BASE/$RMQ_NODE.pid
    PROMETHEUS_PORT=$(cluster_prometheus_port "$i")
    (( AMQP_PORT <= 65535 && DIST_PORT <= 65535 )) || die "cluster ports exceed 65535: lower PUSHD_AMQP_PORT"
}

# Accepts "2" or "pushd-local-2@localhost"; prints the index.
cluster_index_of() {
    local i
    for i in $(seq 1 "$CLUSTER_SIZE"); do
        if [[ "$1" == "$i" || "$1" == "$(cluster_node_name "$i")" ]]; then echo "$i"; return 0; fi
    done
    die "no cluster node '$1' (1..$CLUSTER_SIZE or $(cluster_node_name 1)…)"
}

# Appended to what rmq_prepare wrote: the prometheus plugin on its own loopback port.
rmq_enable_prometheus() {
    echo "[rabbitmq_prometheus]." > "$RMQ_BASE/enabled_plugins"
    [[ "${PUSHD_RABBITMQ_MANAGEMENT:-0}" == 1 ]] && echo "[rabbitmq_management,rabbitmq_prometheus]." > "$RMQ_BASE/enabled_plugins"
    {
        echo "prometheus.tcp.ip = 127.0.0.1"
        echo "prometheus.tcp.port = $PROMETHEUS_PORT"
    } >> "$RMQ_BASE/rabbitmq.conf"
}

cluster_prepare_node() {
    rmq_prepare
    rmq_enable_prometheus
    # A minority side of a partition pauses instead of accepting writes it would later lose;
    # with quorum queues this is what production runs too (Deploy/rabbitmq/README.md).
    echo "cluster_partition_handling = pause_minority" >> "$RMQ_BASE/rabbitmq.conf"
}

cluster_launch_node() {
    log "starting RabbitMQ $RMQ_NODE on 127.0.0.1:$AMQP_PORT (dist $DIST_PORT, prometheus $PROMETHEUS_PORT)"
    rm -f "$RMQ_PID_FILE"
    (rmq_env; cd "$RMQ_BASE" && exec setsid nohup "$RMQ_BIN/rabbitmq-server" \
        >"$RMQ_BASE/log/startup.log" 2>&1 </dev/null) 9>&- &
    CLUSTER_LAUNCHERS[$1]=$!
}

cluster_members() {  # running members as seen by node $1
    cluster_select "$1"
    rmqctl -q cluster_status --formatter json 2>/dev/null \
        | python3 -c 'import json,sys; print(" ".join(sorted(json.load(sys.stdin).get("running_nodes", []))))'
}

cmd_cluster_start() {
    local t0=$SECONDS i
    declare -gA CLUSTER_LAUNCHERS=()
    # All stopped nodes boot at once: a restarted member waits for its peers' tables, so
    # starting them one by one would stall the first until the others are up.
    for i in $(seq 1 "$CLUSTER_SIZE"); do
        cluster_select "$i"
        cluster_prepare_node
        if rmq_node_up; then
            rmq_app_running || { log "$RMQ_NODE up but app stopped; start_app"; rmqctl -q start_app >/dev/null; }
        else
            cluster_launch_node "$i"
        fi
    done
    for i in "${!CLUSTER_LAUNCHERS[@]}"; do
        cluster_select "$i"
        RMQ_LAUNCHER_PID=${CLUSTER_LAUNCHERS[$i]}
        rmq_await
    done
    # First boot: every node is a cluster of its own; join them to node 1 (once).
    local first; first=$(cluster_node_name 1)
    for i in $(seq 2 "$CLUSTER_SIZE"); do
        if [[ " $(cluster_members "$i") " != *" $first "* ]]; then
            cluster_select "$i"
            log "joining $RMQ_NODE to $first"
            rmqctl -q stop_app >/dev/null
            rmqctl -q join_cluster "$first" >/dev/null 2>&1 || die "join_cluster $first failed (logs: $RMQ_BASE/log)"
            rmqctl -q start_app >/dev/null
        fi
    done
    local members; members=$(cluster_members 1)
    [[ $(wc -w <<<"$members") -eq $CLUSTER_SIZE ]] || die "cluster has $(wc -w <<<"$members") running nodes, expected $CLUSTER_SIZE: $members"
    # Users and topology are cluster-wide: provisioning through node 1 once is enough. Queues
    # declared now get one member per node (initial quorum group size = cluster size).
    cluster_select 1
    rmq_provision
    log "cluster of $CLUSTER_SIZE ready in $((SECONDS - t0))s ($members)"
}

cmd_cluster_stop() {
    local i
    for i in $(seq "$CLUSTER_SIZE" -1 1); do
        cluster_select "$i"
        if [[ -d "$RMQ_BASE" ]] && rmq_node_up; then
            log "stopping $RMQ_NODE"
            rmqctl -q stop "$RMQ_PID_FILE" >/dev/null
        fi
    done
}

cmd_cluster_status() {
    local i rc=0
    for i in $(seq 1 "$CLUSTER_SIZE"); do
        cluster_select "$i"
        if [[ -d "$RMQ_BASE" ]] && rmq_node_up && rmq_app_running; then
            echo "$RMQ_NODE: running  127.0.0.1:$AMQP_PORT  prometheus 127.0.0.1:$PROMETHEUS_PORT"
        else
            echo "$RMQ_NODE: stopped"; rc=3
        fi
    done
    return $rc
}

# PUSHD_AMQP_PORT and PUSHD_RABBITMQ_NODENAME stay those of the single node: the cluster's
# names and ports derive from them, so later `services.sh cluster-...` calls find the same nodes.
cmd_cluster_env() {
    local i urls=() nodes=() prometheus=()
    for i in $(seq 1 "$CLUSTER_SIZE"); do
        urls+=("amqp://$DB_USER:$DB_PASS@127.0.0.1:$(cluster_amqp_port "$i")/%2f")
        nodes+=("$(cluster_node_name "$i")")
        prometheus+=("127.0.0.1:$(cluster_prometheus_port "$i")")
    done
    cluster_select 1
    local IFS=,
    cat <<EOF
export PUSHD_STATE_DIR='$STATE_DIR'
export PUSHD_DATABASE_URL='$(database_url)'
export PUSHD_AMQP_URL='${urls[*]}'
export PUSHD_CLUSTER_AMQP_URLS='${urls[*]}'
export PUSHD_RABBITMQ_CLUSTER_NODES='${nodes[*]}'
export PUSHD_RABBITMQ_CLUSTER_PROMETHEUS='${prometheus[*]}'
export PUSHD_RABBITMQCTL='env HOME=$RMQ_HOME RABBITMQ_CONF_ENV_FILE=$RMQ_BASE/rabbitmq-env.conf $RMQ_BIN/rabbitmqctl -n $RMQ_NODE'
export PUSHD_PG_BIN='$(pg_bin_dir)'
export PUSHD_PG_PORT='$PG_PORT'
export PUSHD_AMQP_PORT='$SINGLE_AMQP_PORT'
export PUSHD_RABBITMQ_NODENAME='$CLUSTER_NAME@localhost'
EOF
}

# Prints the node that leads quorum queue $1, asking the first node that answers.
cmd_cluster_leader() {
    local queue=${1:?queue name} i leader
    for i in $(seq 1 "$CLUSTER_SIZE"); do
        cluster_select "$i"
        leader=$(rmqctl -q list_queues name leader --no-table-headers 2>/dev/null \
            | awk -v q="$queue" '$1 == q { print $2 }') || continue
        [[ -n "$leader" ]] && { echo "$leader"; return 0; }
    done
    die "no running node knows a leader for queue '$queue'"
}

# rabbitmqctl against the first node that answers (any node sees the whole cluster).
cmd_cluster_rabbitmqctl() {
    local i
    for i in $(seq 1 "$CLUSTER_SIZE"); do
        cluster_select "$i"
        if [[ -d "$RMQ_BASE" ]] && rmq_node_up; then rmqctl "$@"; return; fi
    done
    die "no cluster node is running"
}

cmd_cluster_stop_node() {
    local i; i=$(cluster_index_of "${1:?node}")
    cluster_select "$i"
    rmq_node_up || die "$RMQ_NODE is not running"
    log "stopping $RMQ_NODE"
    rmqctl -q stop "$RMQ_PID_FILE" >/dev/null
}

# A crash rather than a shutdown: SIGKILL to the node's Erlang VM (its pid file), so its
# connections drop without a close and its peers learn of it from the distribution link.
cmd_cluster_kill_node() {
    local i; i=$(cluster_index_of "${1:?node}")
    cluster_select "$i"
    local pid; pid=$(cat "$RMQ_PID_FILE" 2>/dev/null || true)
    [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || die "$RMQ_NODE is not running (no live pid in $RMQ_PID_FILE)"
    log "killing $RMQ_NODE (SIGKILL to pid $pid)"
    kill -KILL "$pid"
    local deadline=$((SECONDS + 30))
    while kill -0 "$pid" 2>/dev/null; do
        (( SECONDS < deadline )) || die "$RMQ_NODE (pid $pid) survived SIGKILL for 30 s"
        sleep 0.1
    done
}

cmd_cluster_start_node() {
    local i; i=$(cluster_index_of "${1:?node}")
    declare -gA CLUSTER_LAUNCHERS=()
    cluster_select "$i"
    rmq_node_up && { log "$RMQ_NODE already running"; return 0; }
    cluster_prepare_node
    cluster_launch_node "$i"
    RMQ_LAUNCHER_PID=${CLUSTER_LAUNCHERS[$i]}
    rmq_await
}

cmd_cluster_reset() {
    cmd_cluster_stop
    log "removing $CLUSTER_BASE"
    rm -rf -- "$CLUSTER_BASE"
}
