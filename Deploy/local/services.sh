#!/usr/bin/env bash
# Deploy/local/services.sh — private PostgreSQL + RabbitMQ for local development and CI.
#
#   services.sh start                 install missing Debian packages, start both, provision
#   services.sh stop                  stop both cleanly
#   services.sh status                show state (exit 0 only if both are up)
#   services.sh env                   print shell exports:  eval "$(Deploy/local/services.sh env)"
#   services.sh rabbitmq-restart-app  rabbitmqctl stop_app + start_app (fault tests)
#   services.sh pg-restart            pg_ctl restart -m fast -w (fault tests)
#   services.sh pg-stop / pg-start    stop PostgreSQL alone / start it again (outage tests)
#   services.sh psql [args]           psql as role pushd on database pushd
#   services.sh rabbitmqctl [args]    rabbitmqctl against the private node
#   services.sh reset                 stop and delete the services' state (asks no questions;
#                                     other files in $PUSHD_STATE_DIR are left alone)
#
#   services.sh cluster-start         PostgreSQL and a 3-node RabbitMQ cluster (rabbitmq-cluster.sh)
#   services.sh cluster-stop          stop the cluster's nodes (PostgreSQL: `stop`)
#   services.sh cluster-status        one line per node (exit 0 only if all are up)
#   services.sh cluster-env           exports; PUSHD_AMQP_URL is the comma-separated node list
#   services.sh cluster-leader Q      the node leading quorum queue Q
#   services.sh cluster-rabbitmqctl … rabbitmqctl against the first running node
#   services.sh cluster-stop-node N   stop node N (1..3 or its name), e.g. the leader (fault tests)
#   services.sh cluster-kill-node N   SIGKILL node N's Erlang VM: a crash, not a shutdown
#   services.sh cluster-start-node N  start it again; it rejoins the cluster
#   services.sh cluster-reset         stop the cluster and delete its state
#
# Both services are private: own data directories under $PUSHD_STATE_DIR, own ports, loopback
# only, own RabbitMQ node name and Erlang cookie. The system's own PostgreSQL cluster and
# RabbitMQ node (if the Debian packages started them) are never touched. epmd is shared.
#
# Environment (all optional):
#   PUSHD_STATE_DIR       default $HOME/.pushd-local
#   PUSHD_PG_PORT         default 55432
#   PUSHD_AMQP_PORT       default 55672
#   PUSHD_AMQP_DIST_PORT  Erlang distribution port; default PUSHD_AMQP_PORT+20000, or
#                         PUSHD_AMQP_PORT-10000 when that would exceed 65535 (55672 -> 45672)
#   PUSHD_RABBITMQ_MANAGEMENT=1  also enable the management plugin (HTTP API/UI, rabbitmqadmin)
#   PUSHD_RABBITMQ_PROMETHEUS=1  also enable rabbitmq_prometheus on the single node, on
#                         127.0.0.1:PUSHD_AMQP_PORT+2 (cluster nodes always have it)
#   PUSHD_AMQP_MGMT_PORT  default PUSHD_AMQP_PORT+1 (only with PUSHD_RABBITMQ_MANAGEMENT=1)
#   PUSHD_RABBITMQ_NODENAME  default pushd-local@localhost (epmd is shared: a second private
#                         node on the same machine, e.g. another user's, needs another name)
#   PUSHD_PG_BIN          default: newest /usr/lib/postgresql/*/bin
#   PUSHD_START_TIMEOUT   seconds to wait for each service, default 120
#
# Local-development credentials only: role/user "pushd" with password "pushd".

set -Eeuo pipefail
umask 022

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd -P)
DEFINITIONS_FILE="$REPO_ROOT/Deploy/rabbitmq/definitions.json"

log()  { printf '[pushd-local] %s\n' "$*" >&2; }
die()  { printf '[pushd-local] ERROR: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- configuration

if [[ -z "${HOME:-}" ]]; then
    HOME=$(getent passwd "$(id -u)" | cut -d: -f6)
    export HOME
fi
STATE_DIR=${PUSHD_STATE_DIR:-$HOME/.pushd-local}
case "$STATE_DIR" in
    /*) ;;
    *) STATE_DIR="$PWD/$STATE_DIR" ;;
esac
STATE_DIR=${STATE_DIR%/}
[[ "$STATE_DIR" =~ [[:space:]\'\"\\\$\`] ]] && die "PUSHD_STATE_DIR must not contain whitespace, quotes, backslashes or \$: '$STATE_DIR'"
[[ "$STATE_DIR" == "/" ]] && die "PUSHD_STATE_DIR must not be /"

PG_PORT=${PUSHD_PG_PORT:-55432}
AMQP_PORT=${PUSHD_AMQP_PORT:-55672}
if [[ -n "${PUSHD_AMQP_DIST_PORT:-}" ]]; then
    DIST_PORT=$PUSHD_AMQP_DIST_PORT
elif (( AMQP_PORT + 20000 <= 65535 )); then
    DIST_PORT=$((AMQP_PORT + 20000))
else
    DIST_PORT=$((AMQP_PORT - 10000))
fi
MGMT_PORT=${PUSHD_AMQP_MGMT_PORT:-$((AMQP_PORT + 1))}
START_TIMEOUT=${PUSHD_START_TIMEOUT:-120}
for p in PG_PORT AMQP_PORT DIST_PORT MGMT_PORT START_TIMEOUT; do
    [[ "${!p}" =~ ^[0-9]+$ ]] || die "$p must be a number, got '${!p}'"
done
for p in PG_PORT AMQP_PORT DIST_PORT MGMT_PORT; do
    (( ${!p} >= 1024 && ${!p} <= 65535 )) || die "$p must be in 1024..65535, got ${!p}"
done
(( DIST_PORT >= 35672 && DIST_PORT <= 35682 )) && \
    die "distribution port $DIST_PORT collides with the CLI tools' port range 35672-35682; set PUSHD_AMQP_DIST_PORT"

RMQ_NODE=${PUSHD_RABBITMQ_NODENAME:-pushd-local@localhost}
[[ "$RMQ_NODE" =~ ^[A-Za-z0-9_-]+@localhost$ ]] || die "PUSHD_RABBITMQ_NODENAME must look like name@localhost"
RMQ_BIN=${PUSHD_RABBITMQ_BIN:-/usr/lib/rabbitmq/bin}   # not /usr/sbin: Debian's wrappers su to 'rabbitmq'
RMQ_BASE=$STATE_DIR/rabbitmq
RMQ_HOME=$RMQ_BASE/home                                # private $HOME: holds the private .erlang.cookie
RMQ_PID_FILE=$RMQ_BASE/$RMQ_NODE.pid

DB_NAME=pushd
DB_USER=pushd
DB_PASS=pushd
PG_ADMIN=postgres                                      # superuser inside the private cluster

IS_ROOT=false
[[ $(id -u) -eq 0 ]] && IS_ROOT=true

# ---------------------------------------------------------------- installation

pg_bin_dir() {
    if [[ -n "${PUSHD_PG_BIN:-}" ]]; then
        echo "$PUSHD_PG_BIN"; return
    fi
    local d
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    [[ -n "$d" && -x "$d/initdb" ]] && echo "$d"
    return 0
}

ensure_installed() {
    local missing=()
    [[ -n "$(pg_bin_dir)" ]] || missing+=(postgresql)
    [[ -x "$RMQ_BIN/rabbitmq-server" && -x "$RMQ_BIN/rabbitmqctl" ]] || missing+=(rabbitmq-server)
    (( ${#missing[@]} == 0 )) && return 0
    local sudo=()
    if ! $IS_ROOT; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo=(sudo -n)
        else
            die "missing Debian packages: ${missing[*]}; run as root or: sudo apt-get install -y ${missing[*]}"
        fi
    fi
    log "installing ${missing[*]} (apt-get)"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    # The packages' postinst may start (or, under policy-rc.d, refuse to start) the system
    # services; either way they are unrelated to the private instances below.
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
    [[ -n "$(pg_bin_dir)" ]] || die "postgresql installed but no /usr/lib/postgresql/*/bin/initdb found"
    [[ -x "$RMQ_BIN/rabbitmqctl" ]] || die "rabbitmq-server installed but $RMQ_BIN/rabbitmqctl not found"
}

# ---------------------------------------------------------------- PostgreSQL layout

# As a normal user PostgreSQL runs as that user. As root it must run as the 'postgres' OS user,
# which usually cannot traverse /root: then the data, socket and log directories live in a
# postgres-owned directory under ~postgres (one per state dir) and $STATE_DIR/pg,
# $STATE_DIR/pg-run and $STATE_DIR/pg-log are symlinks to them.
pg_layout() {
    PG_BIN=$(pg_bin_dir)
    if $IS_ROOT; then
        PG_OS_USER=postgres
        getent passwd postgres >/dev/null || die "OS user 'postgres' does not exist (is the postgresql package installed?)"
    else
        PG_OS_USER=$(id -un)
    fi
    PG_LOCATION_FILE=$STATE_DIR/pg.location
    if [[ -f "$PG_LOCATION_FILE" ]]; then
        PG_BASE=$(cat "$PG_LOCATION_FILE")
    else
        PG_BASE=$STATE_DIR
    fi
    PG_DATA=$PG_BASE/pg
    PG_RUN=$PG_BASE/pg-run
    PG_LOGDIR=$PG_BASE/pg-log
    PG_LOG=$PG_LOGDIR/postgresql.log
}

# Run a command as the OS user that owns the cluster, from a directory it can read.
as_pg() {
    # 9>&- : daemons must not inherit the lock file descriptor (see with_lock).
    if $IS_ROOT; then
        (cd / && runuser -u "$PG_OS_USER" -- "$@") 9>&-
    else
        "$@" 9>&-
    fi
}

pg_prepare_dirs() {
    mkdir -p "$STATE_DIR"
    if [[ ! -f "$PG_LOCATION_FILE" ]]; then
        local base=$STATE_DIR
        if $IS_ROOT && ! runuser -u "$PG_OS_USER" -- test -x "$STATE_DIR" 2>/dev/null; then
            local pg_home hash
            pg_home=$(getent passwd "$PG_OS_USER" | cut -d: -f6)
            [[ -d "$pg_home" ]] || die "home directory of $PG_OS_USER ($pg_home) does not exist"
            hash=$(printf '%s' "$STATE_DIR" | sha256sum | cut -c1-12)
            base=$pg_home/pushd-local/$hash
            log "postgres cannot reach $STATE_DIR; PostgreSQL files go to $base (symlinked from $STATE_DIR)"
            mkdir -p "$base"
            chown "$PG_OS_USER:" "$pg_home/pushd-local" "$base"
            chmod 0700 "$base"
            printf '%s\n' "$STATE_DIR" > "$base/owner-state-dir"
        fi
        printf '%s\n' "$base" > "$PG_LOCATION_FILE"
        pg_layout
    fi
    local d
    for d in "$PG_DATA" "$PG_RUN" "$PG_LOGDIR"; do
        if [[ ! -d "$d" ]]; then
            mkdir -p "$d"
        fi
        if $IS_ROOT; then chown "$PG_OS_USER:" "$d"; fi
    done
    chmod 0700 "$PG_DATA"
    chmod 0755 "$PG_RUN" "$PG_LOGDIR"
    if [[ "$PG_BASE" != "$STATE_DIR" ]]; then
        for d in pg pg-run pg-log; do
            [[ -L "$STATE_DIR/$d" ]] || ln -sfn "$PG_BASE/$d" "$STATE_DIR/$d"
        done
    fi
    # Unix socket paths are limited to 107 bytes.
    local sock="$PG_RUN/.s.PGSQL.$PG_PORT"
    (( ${#sock} <= 100 )) || die "socket path too long (${#sock} bytes): $sock — use a shorter PUSHD_STATE_DIR"
}

pg_running() {
    [[ -n "$PG_BIN" && -f "$PG_DATA/PG_VERSION" ]] || return 1
    as_pg "$PG_BIN/pg_ctl" status -D "$PG_DATA" >/dev/null 2>&1
}

pg_write_config() {
    # Regenerated on every start so a changed port takes effect; included from postgresql.conf.
    local conf="$PG_DATA/pushd-local.conf"
    as_pg tee "$conf" >/dev/null <<EOF
# Written by Deploy/local/services.sh on every start — edit the script, not this file.
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PG_RUN'
max_connections = 200
password_encryption = 'scram-sha-256'
logging_collector = off
log_timezone = 'UTC'
timezone = 'UTC'
EOF
    as_pg tee "$PG_DATA/pg_hba.conf" >/dev/null <<EOF
# Written by Deploy/local/services.sh.
# TYPE  DATABASE  USER       ADDRESS        METHOD
local   all       $PG_ADMIN                  peer map=pushd_admin
local   all       all                        scram-sha-256
host    all       all        127.0.0.1/32   scram-sha-256
EOF
    as_pg tee "$PG_DATA/pg_ident.conf" >/dev/null <<EOF
# Written by Deploy/local/services.sh: OS users allowed to connect as $PG_ADMIN over the socket.
pushd_admin  $(id -un)  $PG_ADMIN
pushd_admin  $PG_OS_USER  $PG_ADMIN
EOF
}

pg_initdb() {
    [[ -f "$PG_DATA/PG_VERSION" ]] && return 0
    log "initdb $PG_DATA"
    as_pg "$PG_BIN/initdb" -D "$PG_DATA" -U "$PG_ADMIN" --encoding=UTF8 --locale=C.UTF-8 \
        --auth-local=peer --auth-host=scram-sha-256 --no-instructions >"$PG_LOGDIR/initdb.log" 2>&1 \
        || { cat "$PG_LOGDIR/initdb.log" >&2; die "initdb failed"; }
    printf "\ninclude_if_exists = 'pushd-local.conf'\n" | as_pg tee -a "$PG_DATA/postgresql.conf" >/dev/null
}

pg_admin_psql() {
    as_pg "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$PG_RUN" -p "$PG_PORT" -U "$PG_ADMIN" -d postgres
}

pg_provision() {
    pg_admin_psql <<EOF
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$DB_USER') THEN
    CREATE ROLE $DB_USER LOGIN CREATEDB PASSWORD '$DB_PASS';
  ELSE
    ALTER ROLE $DB_USER LOGIN CREATEDB PASSWORD '$DB_PASS';
  END IF;
END
\$\$;
SELECT 'CREATE DATABASE $DB_NAME OWNER $DB_USER'
 WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '$DB_NAME') \gexec
ALTER DATABASE $DB_NAME OWNER TO $DB_USER;
EOF
}

pg_start() {
    pg_layout
    pg_prepare_dirs
    pg_initdb
    if pg_running; then
        log "PostgreSQL already running ($PG_DATA, port $PG_PORT)"
    else
        pg_write_config
        log "starting PostgreSQL on 127.0.0.1:$PG_PORT"
        as_pg "$PG_BIN/pg_ctl" start -D "$PG_DATA" -l "$PG_LOG" -w -t "$START_TIMEOUT" -s \
            || { tail -n 30 "$PG_LOG" >&2 || true; die "PostgreSQL did not start (log: $PG_LOG)"; }
    fi
    pg_provision
}

pg_stop() {
    pg_layout
    if pg_running; then
        log "stopping PostgreSQL"
        as_pg "$PG_BIN/pg_ctl" stop -D "$PG_DATA" -m fast -w -t "$START_TIMEOUT" -s
    else
        log "PostgreSQL not running"
    fi
}

pg_restart() {
    pg_layout
    pg_running || die "PostgreSQL is not running"
    log "restarting PostgreSQL (fast)"
    as_pg "$PG_BIN/pg_ctl" restart -D "$PG_DATA" -l "$PG_LOG" -m fast -w -t "$START_TIMEOUT" -s
}

# ---------------------------------------------------------------- RabbitMQ

rmq_env() {
    # Everything the server and the CLI tools need to find the private node and nothing else.
    export HOME="$RMQ_HOME"
    export RABBITMQ_NODENAME="$RMQ_NODE"
    export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
    export RABBITMQ_NODE_PORT="$AMQP_PORT"
    export RABBITMQ_DIST_PORT="$DIST_PORT"
    export RABBITMQ_MNESIA_BASE="$RMQ_BASE/mnesia"
    export RABBITMQ_LOG_BASE="$RMQ_BASE/log"
    export RABBITMQ_CONFIG_FILE="$RMQ_BASE/rabbitmq.conf"
    export RABBITMQ_ADVANCED_CONFIG_FILE="$RMQ_BASE/advanced.config"
    export RABBITMQ_ENABLED_PLUGINS_FILE="$RMQ_BASE/enabled_plugins"
    export RABBITMQ_CONF_ENV_FILE="$RMQ_BASE/rabbitmq-env.conf"   # instead of /etc/rabbitmq/rabbitmq-env.conf
    export RABBITMQ_PID_FILE="$RMQ_PID_FILE"
    # Erlang distribution on loopback only; if no epmd runs yet, the one we spawn is loopback-only too.
    export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
    export ERL_EPMD_ADDRESS=127.0.0.1
}

# The CLI only needs the private HOME (cookie) and the env file location.
RMQCTL_CMD="env HOME=$RMQ_HOME RABBITMQ_CONF_ENV_FILE=$RMQ_BASE/rabbitmq-env.conf RABBITMQ_ENABLED_PLUGINS_FILE=$RMQ_BASE/enabled_plugins $RMQ_BIN/rabbitmqctl -n $RMQ_NODE"

rmqctl()   { (rmq_env; "$RMQ_BIN/rabbitmqctl" -n "$RMQ_NODE" "$@") 9>&-; }
rmqdiag()  { (rmq_env; "$RMQ_BIN/rabbitmq-diagnostics" -n "$RMQ_NODE" "$@") 9>&-; }

rmq_node_up()     { [[ -f "$RMQ_HOME/.erlang.cookie" ]] && rmqdiag -q ping >/dev/null 2>&1; }
rmq_app_running() { rmqdiag -q check_running >/dev/null 2>&1; }

rmq_prepare() {
    mkdir -p "$RMQ_HOME" "$RMQ_BASE/mnesia" "$RMQ_BASE/log"
    chmod 0700 "$RMQ_BASE" "$RMQ_HOME"
    if [[ ! -s "$RMQ_HOME/.erlang.cookie" ]]; then
        # 40 random hex digits, private to this state dir.
        (umask 077; od -An -N20 -tx1 /dev/urandom | tr -d ' \n' > "$RMQ_HOME/.erlang.cookie")
    fi
    chmod 0400 "$RMQ_HOME/.erlang.cookie"
    : > "$RMQ_BASE/rabbitmq-env.conf"
    [[ -f "$RMQ_BASE/advanced.config" ]] || echo "[]." > "$RMQ_BASE/advanced.config"
    local plugins="[]."
    [[ "${PUSHD_RABBITMQ_MANAGEMENT:-0}" == 1 ]] && plugins="[rabbitmq_management]."
    echo "$plugins" > "$RMQ_BASE/enabled_plugins"
    {
        echo "# Written by Deploy/local/services.sh on every start — edit the script, not this file."
        echo "# Listener address/port come from RABBITMQ_NODE_IP_ADDRESS / RABBITMQ_NODE_PORT."
        echo "# The default user created on first boot is pushd/pushd (no 'guest' user)."
        echo "default_user = $DB_USER"
        echo "default_pass = $DB_PASS"
        echo "default_vhost = /"
        echo "default_user_tags.administrator = true"
        echo "default_permissions.configure = .*"
        echo "default_permissions.read = .*"
        echo "default_permissions.write = .*"
        echo "log.console = false"
        echo "log.file.level = info"
        echo "disk_free_limit.absolute = 50MB"
        if [[ "${PUSHD_RABBITMQ_MANAGEMENT:-0}" == 1 ]]; then
            echo "management.tcp.ip = 127.0.0.1"
            echo "management.tcp.port = $MGMT_PORT"
        fi
    } > "$RMQ_BASE/rabbitmq.conf"
}

rmq_startup_logs() {
    local f
    for f in "$RMQ_BASE/log/startup.log" "$RMQ_BASE/log/$RMQ_NODE.log"; do
        [[ -s "$f" ]] && { echo "--- $f" >&2; tail -n 25 "$f" >&2; }
    done
    return 0
}

rmq_await() {
    # Bounded polling: await_startup blocks until the app is up, but fails at once while the VM
    # is not yet registered with epmd; stop waiting as soon as the server process is gone.
    local deadline=$((SECONDS + START_TIMEOUT))
    while (( SECONDS < deadline )); do
        if rmqctl -q await_startup --timeout "$START_TIMEOUT" >/dev/null 2>&1; then
            return 0
        fi
        if ! kill -0 "$RMQ_LAUNCHER_PID" 2>/dev/null; then
            rmq_startup_logs
            grep -q duplicate_node_name "$RMQ_BASE/log/startup.log" 2>/dev/null && \
                die "node name $RMQ_NODE is already in use by another Erlang node (another state dir or user?); stop it or set PUSHD_RABBITMQ_NODENAME"
            die "RabbitMQ exited during startup (logs: $RMQ_BASE/log)"
        fi
        sleep 0.5
    done
    rmq_startup_logs
    die "RabbitMQ did not start within ${START_TIMEOUT}s (logs: $RMQ_BASE/log)"
}

rmq_provision() {
    # The node creates pushd/pushd on first boot (default_user); this keeps older state dirs in line.
    if ! rmqctl -s list_users 2>/dev/null | awk '{print $1}' | grep -qx "$DB_USER"; then
        rmqctl -q add_user "$DB_USER" "$DB_PASS" >/dev/null
        rmqctl -q set_user_tags "$DB_USER" administrator >/dev/null
    fi
    rmqctl -q set_permissions -p / "$DB_USER" '.*' '.*' '.*' >/dev/null
    [[ -f "$DEFINITIONS_FILE" ]] || die "missing $DEFINITIONS_FILE"
    rmqctl -q import_definitions "$DEFINITIONS_FILE" >/dev/null \
        || die "import of $DEFINITIONS_FILE failed (existing queues with different arguments? see Deploy/rabbitmq/README.md)"
}

rmq_start() {
    rmq_prepare
    [[ "${PUSHD_RABBITMQ_PROMETHEUS:-0}" == 1 ]] && rmq_enable_prometheus
    if rmq_node_up; then
        if rmq_app_running; then
            log "RabbitMQ already running ($RMQ_NODE, port $AMQP_PORT)"
        else
            log "RabbitMQ node up but app stopped; start_app"
            rmqctl -q start_app >/dev/null
        fi
    else
        log "starting RabbitMQ $RMQ_NODE on 127.0.0.1:$AMQP_PORT (dist $DIST_PORT)"
        rm -f "$RMQ_PID_FILE"
        # In the background in its own session rather than with -detached: we keep the PID to
        # fail fast, and early errors (e.g. "node name already in use") land in startup.log.
        (rmq_env; cd "$RMQ_BASE" && exec setsid nohup "$RMQ_BIN/rabbitmq-server" \
            >"$RMQ_BASE/log/startup.log" 2>&1 </dev/null) 9>&- &
        RMQ_LAUNCHER_PID=$!
        rmq_await
    fi
    rmq_provision
}

rmq_stop() {
    if rmq_node_up; then
        log "stopping RabbitMQ"
        rmqctl -q stop "$RMQ_PID_FILE" >/dev/null
    else
        log "RabbitMQ not running"
    fi
}

rmq_restart_app() {
    rmq_node_up || die "RabbitMQ node is not running"
    log "rabbitmqctl stop_app / start_app"
    rmqctl -q stop_app >/dev/null
    rmqctl -q start_app >/dev/null
}

# ---------------------------------------------------------------- the 3-node cluster

# shellcheck source=rabbitmq-cluster.sh
source "$SCRIPT_DIR/rabbitmq-cluster.sh"

# ---------------------------------------------------------------- commands

with_lock() {
    mkdir -p "$STATE_DIR"
    exec 9>"$STATE_DIR/.services.lock"
    flock -w "$START_TIMEOUT" 9 || die "another services.sh holds $STATE_DIR/.services.lock"
}

database_url() { echo "postgresql://$DB_USER:$DB_PASS@127.0.0.1:$PG_PORT/$DB_NAME"; }
amqp_url()     { echo "amqp://$DB_USER:$DB_PASS@127.0.0.1:$AMQP_PORT/%2f"; }

cmd_env() {
    local pgbin
    pgbin=$(pg_bin_dir)
    cat <<EOF
export PUSHD_STATE_DIR='$STATE_DIR'
export PUSHD_DATABASE_URL='$(database_url)'
export PUSHD_AMQP_URL='$(amqp_url)'
export PUSHD_RABBITMQCTL='$RMQCTL_CMD'
export PUSHD_RABBITMQ_NODENAME='$RMQ_NODE'
export PUSHD_PG_BIN='$pgbin'
export PUSHD_PG_PORT='$PG_PORT'
export PUSHD_AMQP_PORT='$AMQP_PORT'
EOF
}

cmd_status() {
    local rc=0
    if [[ -n "$(pg_bin_dir)" ]]; then
        pg_layout
        if pg_running; then
            echo "postgresql: running  127.0.0.1:$PG_PORT  data=$PG_DATA  $(database_url)"
        else
            echo "postgresql: stopped  data=$PG_DATA"; rc=3
        fi
    else
        echo "postgresql: not installed"; rc=3
    fi
    if [[ -x "$RMQ_BIN/rabbitmqctl" ]] && rmq_node_up; then
        if rmq_app_running; then
            echo "rabbitmq:   running  $RMQ_NODE  127.0.0.1:$AMQP_PORT  $(amqp_url)"
        else
            echo "rabbitmq:   node up, app stopped  $RMQ_NODE"; rc=3
        fi
    else
        echo "rabbitmq:   stopped  $RMQ_NODE"; rc=3
    fi
    return $rc
}

cmd_reset() {
    # $PUSHD_STATE_DIR is shared with other Deploy/ scripts (e.g. the tooling venv): delete only
    # what this script creates.
    cmd_stop_locked
    local pg_base=$STATE_DIR
    [[ -f "$STATE_DIR/pg.location" ]] && pg_base=$(cat "$STATE_DIR/pg.location")
    if [[ "$pg_base" != "$STATE_DIR" && -f "$pg_base/owner-state-dir" \
          && "$(cat "$pg_base/owner-state-dir")" == "$STATE_DIR" ]]; then
        log "removing $pg_base"
        rm -rf -- "$pg_base"
        rmdir --ignore-fail-on-non-empty -- "$(dirname "$pg_base")"
    fi
    log "removing PostgreSQL and RabbitMQ state from $STATE_DIR"
    rm -rf -- "$STATE_DIR/pg" "$STATE_DIR/pg-run" "$STATE_DIR/pg-log" "$STATE_DIR/pg.location" \
              "$STATE_DIR/rabbitmq"
}

cmd_stop_locked() {
    if [[ -n "$(pg_bin_dir)" ]]; then pg_stop; fi
    if [[ -x "$RMQ_BIN/rabbitmqctl" ]]; then rmq_stop; fi
    return 0
}

main() {
    local cmd=${1:-}
    [[ $# -gt 0 ]] && shift
    case "$cmd" in
        start)
            with_lock
            ensure_installed
            local t0=$SECONDS
            pg_start
            rmq_start
            log "ready in $((SECONDS - t0))s — eval \"\$($0 env)\""
            ;;
        stop)   with_lock; cmd_stop_locked ;;
        status) cmd_status ;;
        env)    cmd_env ;;
        rabbitmq-restart-app) with_lock; rmq_restart_app ;;
        pg-restart) with_lock; pg_restart ;;
        pg-stop) with_lock; pg_stop ;;
        pg-start) with_lock; pg_start ;;
        psql)
            pg_layout
            exec "$PG_BIN/psql" "$(database_url)" "$@"
            ;;
        rabbitmqctl) rmqctl "$@" ;;
        reset) with_lock; cmd_reset ;;
        cluster-start)
            with_lock
            ensure_installed
            pg_start
            cmd_cluster_start
            ;;
        cluster-stop)   with_lock; cmd_cluster_stop ;;
        cluster-status) cmd_cluster_status ;;
        cluster-env)    cmd_cluster_env ;;
        cluster-leader) cmd_cluster_leader "$@" ;;
        cluster-rabbitmqctl) cmd_cluster_rabbitmqctl "$@" ;;
        cluster-stop-node)  with_lock; cmd_cluster_stop_node "$@" ;;
        cluster-start-node) with_lock; cmd_cluster_start_node "$@" ;;
        cluster-kill-node)  with_lock; cmd_cluster_kill_node "$@" ;;
        cluster-reset)  with_lock; cmd_cluster_reset ;;
        -h|--help|help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" ;;
        *) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" | sed -n '1,24p' >&2; exit 2 ;;
    esac
}

main "$@"
