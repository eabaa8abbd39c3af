#!/usr/bin/env bash
# The envelope end to end, as a device and the server would do it: a device key pair, a
# notification sealed for it, opened again with the private key. Stand-in for the main job
# until the local cluster (Deploy/cluster.sh) exists.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$PUSHD_REPO"
ensure_build_dependencies
swift build -c release 2>&1 | tail -n 1
pushd_bin="$PUSHD_REPO/.build/release/pushd"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$pushd_bin" keygen --out "$work/device.pem" --format ios > "$work/device.pub"
echo "device public key (iOS PKCS#1 base64): $(cut -c1-48 "$work/device.pub")…"
plaintext='{"title":"Anna Svensson","message":"Can we move the interview to 3pm?","body":{"sender":{"id":"c-1","displayName":"Acme","avatarUrl":"https://example.com/a.png"}},"experienceId":"@acme/app","scopeKey":"@acme/app"}'
printf '%s' "$plaintext" | "$pushd_bin" encrypt --public-key "$work/device.pub" --kid demo-key > "$work/envelope.json"
echo "envelope sent through APNs/FCM: $(cut -c1-120 "$work/envelope.json")…"
echo "opened on the device:           $("$pushd_bin" decrypt --private-key "$work/device.pem" < "$work/envelope.json")"
"$pushd_bin" bench crypto --seconds 1
