#!/usr/bin/env bash
# Measure the emulator's own request ceiling with h2load against a RUNNING emulator.
#
#   Deploy/emulator/h2load-ceiling.sh [STATE_DIR]
#
# STATE_DIR is the emulator's --state-dir (default ${PUSHD_STATE_DIR:-~/.pushd-local}/emulator);
# its emulator.json gives the port and the config whose first APNs key signs the JWT.
# Tunables (environment): N=50000 requests, C=4 connections, M=100 streams per connection,
# TOKEN=<64-hex device token with no rule prefix>. Starts nothing itself; exits non-zero
# unless every request got a 2xx.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
base=${PUSHD_STATE_DIR:-$HOME/.pushd-local}
state_dir=${1:-$base/emulator}
info="$state_dir/emulator.json"
N=${N:-50000}
C=${C:-4}
M=${M:-100}
TOKEN=${TOKEN:-00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee}

command -v h2load >/dev/null || { echo "h2load not found (Debian package nghttp2-client)" >&2; exit 1; }
[ -f "$info" ] || { echo "no emulator.json in $state_dir: is the emulator running?" >&2; exit 1; }

python="$base/emulator-venv/bin/python"
[ -x "$python" ] || python=python3

read -r pid port config < <("$python" -c 'import json,sys; i=json.load(open(sys.argv[1])); print(i["pid"], i["port"], i["config"] or "")' "$info")
kill -0 "$pid" 2>/dev/null || { echo "emulator pid $pid (from $info) is not running" >&2; exit 1; }
[ -n "$config" ] || { echo "the emulator runs without --config: no key to sign a JWT with" >&2; exit 1; }

cd "$here"
jwt=$("$python" -m emulator.testkit apns-jwt --config "$config")
topic=$("$python" -m emulator.testkit apns-topic --config "$config")
body=$(mktemp)
trap 'rm -f "$body"' EXIT
printf '%s' '{"aps":{"alert":{"title":"Hello","body":"Load test"},"mutable-content":1},"body":{"k":"v"}}' > "$body"

out=$(h2load -n "$N" -c "$C" -m "$M" \
    -H "authorization: bearer $jwt" -H "apns-topic: $topic" -H "apns-push-type: alert" \
    -H "apns-priority: 10" -d "$body" "https://127.0.0.1:$port/3/device/$TOKEN" 2>&1) || {
    echo "$out" >&2; exit 1; }

echo "$out" | grep -E '^(finished in|requests:|status codes:)'
rps=$(echo "$out" | sed -n 's/^finished in [^,]*, \([0-9.]*\) req\/s.*/\1/p')
ok=$(echo "$out" | sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p')
echo "requests/s: $rps  (n=$N c=$C m=$M, 2xx=$ok)"
[ "$ok" = "$N" ] || { echo "not every request succeeded" >&2; exit 1; }
