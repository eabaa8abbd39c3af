#!/usr/bin/env bash
# The main job: a whole pushd cluster on loopback, from nothing, in one command.
#
#   bash Deploy/cluster.sh          start (or restart) everything and run the demo batch
#   bash Deploy/cluster.sh --prometheus   the same, plus Prometheus (Debian's) scraping the
#                                   workers, the cleanup consumer and RabbitMQ's rabbitmq_prometheus
#                                   with Deploy/prometheus's rules; the report then reads its
#                                   figures from Prometheus's HTTP API (also PUSHD_PROMETHEUS=1)
#   bash Deploy/cluster.sh stop     stop everything this script started
#
# It installs what is missing (Debian packages), starts PostgreSQL, RabbitMQ and the APNs/FCM
# emulator on 127.0.0.1, builds pushd in release mode, migrates, registers demo devices
# (generated keys; some legacy without a key, some with dead tokens), starts two workers and
# the cleanup consumer, publishes a demo batch, shows live progress, then a report. The
# processes keep running until `stop`, so you can enqueue more (`pushd enqueue`).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$PUSHD_REPO"

RUN="$PUSHD_STATE_DIR/cluster"
EMULATOR_PORT=${PUSHD_EMULATOR_PORT:-18443}
EMULATOR_ADMIN_PORT=${PUSHD_EMULATOR_ADMIN_PORT:-18444}
RECIPIENTS=${PUSHD_DEMO_RECIPIENTS:-1000}
JOBS=${PUSHD_DEMO_JOBS:-200}
RECIPIENTS_PER_JOB=${PUSHD_DEMO_RECIPIENTS_PER_JOB:-20}
BUNDLE=com.example.pushd.demo
PROJECT=demo-project
PUSHD="$PUSHD_REPO/.build/release/pushd"
PROMETHEUS=${PUSHD_PROMETHEUS:-0}
PROMETHEUS_PORT=${PUSHD_PROMETHEUS_PORT:-19090}
[ "${1:-}" = "--prometheus" ] && PROMETHEUS=1

stop_processes() {
    for name in prometheus worker-1 worker-2 cleanup emulator; do
        local pidfile="$RUN/$name.pid"
        [ -f "$pidfile" ] || continue
        local pid; pid=$(cat "$pidfile")
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
            for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -KILL "$pid" 2>/dev/null || true
            log "stopped $name (pid $pid)"
        fi
        rm -f "$pidfile"
    done
}

if [ "${1:-}" = "stop" ]; then
    stop_processes
    bash Deploy/local/services.sh stop
    exit 0
fi

ensure_build_dependencies
if [ "$PROMETHEUS" = 1 ]; then
    source Deploy/prometheus/local.sh
    export PUSHD_RABBITMQ_PROMETHEUS=1  # services.sh: rabbitmq_prometheus on AMQP port + 2
fi
log "building pushd (release)"
build_release_pushd
bash Deploy/local/services.sh start
eval "$(bash Deploy/local/services.sh env)"
stop_processes  # a previous run's workers, if any: this run starts fresh ones
# The demo starts from this version's topology every run: a state directory kept from an
# older version may hold queues declared with other arguments, which RabbitMQ never changes
# in place (workers would stop with 406 PRECONDITION_FAILED). Jobs left from an earlier demo
# run go with them.
log "re-creating the pushd topology on the local broker"
for queue in $(python3 -c 'import json,sys; print(" ".join(q["name"] for q in json.load(open(sys.argv[1]))["queues"]))' Deploy/rabbitmq/definitions.json); do
    bash Deploy/local/services.sh rabbitmqctl -q delete_queue "$queue" >/dev/null 2>&1 || true
done
bash Deploy/local/services.sh rabbitmqctl -q import_definitions "$PUSHD_REPO/Deploy/rabbitmq/definitions.json" >/dev/null
mkdir -p "$RUN/keys"

# The emulator, with test credentials made once.
if [ ! -f "$RUN/credentials/emulator-config.json" ]; then
    source Deploy/emulator/venv.sh
    ensure_venv Deploy/emulator/requirements.txt
    "$EMULATOR_VENV/bin/python" Deploy/emulator/make_credentials.py --out "$RUN/credentials" \
        --bundle "$BUNDLE" --project "$PROJECT" --port "$EMULATOR_PORT" >/dev/null
fi
bash Deploy/emulator/run.sh --port "$EMULATOR_PORT" --admin-port "$EMULATOR_ADMIN_PORT" \
    --state-dir "$RUN/emulator" --config "$RUN/credentials/emulator-config.json" \
    >"$RUN/emulator.out" 2>"$RUN/emulator.log" </dev/null &
echo $! > "$RUN/emulator.pid"
for _ in $(seq 1 150); do [ -s "$RUN/emulator.out" ] && break; sleep 0.1; done
[ -s "$RUN/emulator.out" ] || { log "the emulator did not start: $RUN/emulator.log"; exit 1; }
log "emulator: $(head -c 200 "$RUN/emulator.out")"

"$PUSHD" migrate

# Demo devices: ten device keys shared round-robin; every 50th device legacy (no key),
# every 40th with a dead token (APNs Unregistered / FCM UNREGISTERED).
log "registering $((RECIPIENTS * 2)) demo devices"
for k in $(seq 0 9); do
    [ -f "$RUN/keys/device-$k.pem" ] || "$PUSHD" keygen --out "$RUN/keys/device-$k.pem" --format android > "$RUN/keys/device-$k.pub"
done
python3 - "$RUN" "$RECIPIENTS" "$BUNDLE" "$PROJECT" > "$RUN/devices.sql" <<'PY'
import sys
run, recipients, bundle, project = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
keys = [open(f"{run}/keys/device-{k}.pub").read().strip() for k in range(10)]
with open(f"{run}/devices.tsv", "w") as index:
    print("\\set ON_ERROR_STOP on")
    print("BEGIN;")
    # A fresh demo population each run: earlier runs' demo devices would skew the counts.
    print("DELETE FROM devices WHERE recipient_id LIKE 'demo-user-%';")
    for r in range(recipients):
        for platform in ("ios", "android"):
            n = r * 2 + (platform == "android")
            dead, legacy = r % 20 == 7, r % 25 == 3
            if platform == "ios":
                token = ("410a" if dead else "c0de") + f"{n:060x}"
                app, env = bundle, "sandbox"
            else:
                token = ("unregistered-" if dead else "demo-fcm-") + f"{n:08d}"
                app, env = project, "production"
            key = "NULL" if legacy else "'" + keys[n % 10] + "'"
            print(f"SELECT device_id FROM pushd_register_device('demo-user-{r}', '{platform}', '{app}', '{env}', '{token}', {key}, '1.0.0');")
            index.write(f"{token}\t{'' if legacy else n % 10}\t{'dead' if dead else 'legacy' if legacy else 'normal'}\n")
    print("COMMIT;")
PY
psql -q "$PUSHD_DATABASE_URL" -f "$RUN/devices.sql" >/dev/null

# Two workers and the cleanup consumer, pointed at the emulator.
cat > "$RUN/pushd.json" <<JSON
{
  "ca_file": "$RUN/emulator/ca.pem",
  "apns": [{"team_id": "TEAMID1234", "key_id": "KEYID12345", "key_file": "$RUN/credentials/AuthKey_KEYID12345.p8",
            "bundle_ids": ["$BUNDLE"], "base_url": "https://127.0.0.1:$EMULATOR_PORT"}],
  "fcm": [{"service_account_file": "$RUN/credentials/service-account-$PROJECT.json", "base_url": "https://127.0.0.1:$EMULATOR_PORT"}]
}
JSON
curl -s -X POST "http://127.0.0.1:$EMULATOR_ADMIN_PORT/reset" >/dev/null
# Detached from this script's output, so they keep running after it returns.
start_process() {
    local name=$1 port=$2; shift 2
    PUSHD_METRICS_PORT=$port "$PUSHD" "$@" --config "$RUN/pushd.json" >"$RUN/$name.log" 2>&1 </dev/null &
    echo $! > "$RUN/$name.pid"
}
start_process worker-1 19464 worker
start_process worker-2 19465 worker
start_process cleanup 19466 cleanup
for port in 19464 19465 19466; do
    for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null && break; sleep 0.1; done
done
PROMETHEUS_URL=""
if [ "$PROMETHEUS" = 1 ]; then
    broker="127.0.0.1:$((PUSHD_AMQP_PORT + 2))"
    curl -sf "http://$broker/metrics" >/dev/null || \
        log "rabbitmq_prometheus does not answer on $broker (RabbitMQ was started without it: bash Deploy/local/services.sh stop, then run this again)"
    start_local_prometheus "$RUN/prometheus" "$PROMETHEUS_PORT" 127.0.0.1:19464,127.0.0.1:19465 127.0.0.1:19466 "$broker"
    PROMETHEUS_URL="http://127.0.0.1:$PROMETHEUS_PORT"
fi

# The demo batch.
python3 - "$JOBS" "$RECIPIENTS" "$RECIPIENTS_PER_JOB" "$BUNDLE" "$PROJECT" > "$RUN/jobs.ndjson" <<'PY'
import json, sys, time, uuid
jobs, recipients, per_job, bundle, project = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
run = uuid.uuid4().hex[:8]
for j in range(jobs):
    ids = [f"demo-user-{(j * per_job + i) % recipients}" for i in range(per_job)]
    print(json.dumps({
        "version": 1, "job_id": f"demo-{run}-{j}",
        "app": {"ios_bundle_id": bundle, "fcm_project_id": project, "experience_id": "@acme/recruit", "scope_key": "@acme/recruit"},
        "recipients": {"recipient_ids": ids},
        "content": {"title": f"Anna Svensson ({j})", "message": "Can we move the interview to 3pm?",
                    "data": {"conversationId": f"c-{j}"},
                    "sender": {"id": "acme", "displayName": "Acme Recruiting", "avatarUrl": "https://example.com/acme.png"}},
        "fallback": {"title": "New message", "message": "Open the app to read it"},
        "presentation": {"thread_id": f"c-{j}", "sound": "default", "android_channel_id": "messages"},
    }))
PY
expected=$((JOBS * RECIPIENTS_PER_JOB * 2))
start=$(date +%s.%N)
"$PUSHD" enqueue --file "$RUN/jobs.ndjson"

# Live progress until every job is done (or nothing moves for 30 s). Fewer pushes than
# jobs × recipients are sent: dead tokens are pruned after their first job.
# One scrape of each worker per turn (a scrape costs the worker about 0.2 ms of CPU, which
# `bench cluster` counts): pushes answered, and jobs done, i.e. acked, dead-lettered or
# expired (a requeued one is counted again when it settles, a split one lives on as its
# chunk jobs).
progress() {
    curl -s "http://127.0.0.1:$1/metrics" | awk '
        $1 ~ /^pushd_deliveries_total($|{)/ {answered += $2}
        $1 ~ /^pushd_jobs_completed_total($|{)/ && $1 !~ /result="(requeued|split)"/ {settled += $2}
        END {print answered + 0, settled + 0}'
}
last=-1; still=0; stalled=0
while :; do
    answered=0 jobs_done=0
    for port in 19464 19465; do
        read -r port_answered port_settled < <(progress "$port")
        answered=$((answered + port_answered)) jobs_done=$((jobs_done + port_settled))
    done
    printf '\r  jobs %d/%d  pushes answered %d (at most %d)  ' "$jobs_done" "$JOBS" "$answered" "$expected" >&2
    [ "$jobs_done" -ge "$JOBS" ] && break
    if [ "$answered" -eq "$last" ]; then still=$((still + 1)); else still=0; fi
    [ "$still" -ge 150 ] && { echo >&2; log "no progress for 30 s; see $RUN/*.log"; stalled=1; break; }
    last=$answered; sleep 0.2
done
end=$(date +%s.%N)
echo >&2
sleep 1  # let the cleanup consumer finish its last batch before reading its counters
[ -n "$PROMETHEUS_URL" ] && await_prometheus_scrape_after "$PROMETHEUS_PORT" "$(date +%s.%N)"

python3 - "$RUN" "$EMULATOR_ADMIN_PORT" "$start" "$end" "$PUSHD" "$PROMETHEUS_URL" <<'PY'
import json, subprocess, sys, urllib.parse, urllib.request
run, admin, start, end, pushd = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
prometheus = sys.argv[6]
def metrics(port):
    totals = {}
    for line in urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            totals[name] = totals.get(name, 0) + float(value)
    return totals
def query(expr):
    url = f"{prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    return json.load(urllib.request.urlopen(url))["data"]["result"]
def from_prometheus(job):
    # The same "name{label=...}" keys as a /metrics page, summed over the job's instances.
    totals = {}
    # (Summed here: PromQL aggregations drop the metric name.)
    for series in query(f'{{__name__=~"pushd_.+", job="{job}"}}'):
        labels = {k: v for k, v in series["metric"].items() if k not in ("instance", "job")}
        name = labels.pop("__name__", "")
        key = name + ("{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}" if labels else "")
        totals[key] = totals.get(key, 0) + float(series["value"][1])
    return totals
if prometheus:
    workers, cleanup = [from_prometheus("pushd-worker")], from_prometheus("pushd-cleanup")
    print(f"\n(figures from Prometheus's HTTP API, {prometheus})")
else:
    workers = [metrics(19464), metrics(19465)]
    cleanup = metrics(19466)
def total(prefix, source=workers):
    return {k: sum(m.get(k, 0) for m in source) for k in sorted({k for m in source for k in m if k.startswith(prefix)})}
print("\n=== pushd demo report ===")
jobs = total("pushd_jobs_completed_total")
def label(key):
    return key[key.index("{") + 1:-1].replace('"', "") if "{" in key else key
print("jobs:        ", ", ".join(f"{label(k)} {int(v)}" for k, v in jobs.items()))
deliveries = total("pushd_deliveries_total")
print("deliveries:  ", ", ".join(f"{label(k)}: {int(v)}" for k, v in deliveries.items()))
pruned = total("pushd_tokens_pruned_total", [cleanup])
print("pruned:      ", int(sum(pruned.values())), "devices with dead tokens")
print("dead letters:", int(sum(total("pushd_dead_letters_total").values())))
delivered = sum(v for k, v in deliveries.items() if "delivered" in k)
print(f"throughput:   {delivered / (end - start):.0f} pushes/s delivered ({delivered:.0f} in {end - start:.2f} s, 2 workers, end to end)")
if prometheus:
    window = f"{max(1, int(end - start + 0.999)) + 4}s"
    for series in query(f"histogram_quantile(0.99, sum by (le) (increase(pushd_delivery_seconds_bucket[{window}])))"):
        print(f"p99 latency:  {float(series['value'][1]) * 1000:.0f} ms send → answer (histogram, last {window})")
    depth = query('pushd:queue_messages_ready:max{queue="pushd.jobs"}')
    dead = query('pushd:queue_messages:max{queue="pushd.dead"}')
    if depth:
        print(f"jobs queue:   {int(float(depth[0]['value'][1]))} ready, pushd.dead {int(float(dead[0]['value'][1])) if dead else 0}"
              " (rabbitmq_prometheus; the broker refreshes queue statistics every 5 s)")
    firing = [a["labels"]["alertname"] for a in json.load(urllib.request.urlopen(f"{prometheus}/api/v1/alerts"))["data"]["alerts"]]
    print("alerts:      ", ", ".join(sorted(set(firing))) or "none pending or firing")
stats = json.load(urllib.request.urlopen(f"http://127.0.0.1:{admin}/stats"))
print("emulator:    ", stats.get("total_accepted"), "pushes accepted of", stats.get("total_requests"), "requests")
keys = {}
for line in open(f"{run}/devices.tsv"):
    token, key, kind = line.rstrip("\n").split("\t")
    keys[token] = key
page = json.load(urllib.request.urlopen(f"http://127.0.0.1:{admin}/pushes?since=0&limit=50"))
for push in page["pushes"]:
    if push["service"] != "apns" or not keys.get(push["token"]):
        continue
    body = json.loads(push["body"])
    if not body.get("encrypted_data"):
        continue
    # The demo device as a phone twin (its key imported, nothing registered), reading the
    # payload through PushClient exactly as the iOS notification service extension would.
    phone = f"demo-device-{keys[push['token']]}"
    subprocess.run([pushd, "phone", "init", "--name", phone, "--format", "android", "--recipient", "demo",
                    "--app", "demo", "--token", push["token"], "--private-key", f"{run}/keys/device-{keys[push['token']]}.pem",
                    "--offline", "--force"], capture_output=True, check=True)
    with open(f"{run}/example-payload.json", "w") as example:
        example.write(push["body"])
    shown = subprocess.run([pushd, "phone", "show", "--name", phone, "--file", f"{run}/example-payload.json"],
                           capture_output=True, check=True).stdout.decode()
    print("\none delivered APNs payload, as the emulator saw it (token", push["token"][:8] + "…):")
    print("  ", json.dumps(body)[:400] + ("…" if len(json.dumps(body)) > 400 else ""))
    print("as the device shows it (pushd phone show, with the device's private key):")
    print("\n".join("   " + line for line in shown.strip().splitlines()[1:]))
    break
print("\nlogs: " + run + "/*.log   stop: bash Deploy/cluster.sh stop" + (f"   Prometheus: {prometheus}/graph" if prometheus else ""))
PY
# The report is printed either way; a demo that stalled is a failure to whoever runs this.
[ "$stalled" -eq 0 ] || { log "the demo batch did not finish (no progress for 30 s)"; exit 1; }
