#!/usr/bin/env bash
# Schemas/sql/tests/run.sh — apply Schemas/sql/*.sql to a scratch database (each file in one
# transaction, like the migrator), run every tests/*_test.sql and the pgbench concurrency checks,
# drop it.
#
#   eval "$(Deploy/local/services.sh env)" && Schemas/sql/tests/run.sh
#
# Needs PUSHD_DATABASE_URL pointing at a role that may CREATE DATABASE (the local role pushd can).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
SQL_DIR=$(dirname "$HERE")
: "${PUSHD_DATABASE_URL:?set PUSHD_DATABASE_URL (eval \"\$(Deploy/local/services.sh env)\")}"
PG_BIN=${PUSHD_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
PSQL="$PG_BIN/psql"
PGBENCH="$PG_BIN/pgbench"

base=${PUSHD_DATABASE_URL%/*}
scratch="pushd_sqltest_$$"
url="$base/$scratch"
psql_() { "$PSQL" -X -q -v ON_ERROR_STOP=1 "$@"; }

psql_ "$PUSHD_DATABASE_URL" -c "CREATE DATABASE $scratch"
trap 'psql_ "$PUSHD_DATABASE_URL" -c "DROP DATABASE IF EXISTS $scratch WITH (FORCE)"' EXIT

for f in "$SQL_DIR"/[0-9][0-9][0-9][0-9]_*.sql; do
    echo "apply $(basename "$f")"
    psql_ "$url" --single-transaction -f "$f"
done
for t in "$HERE"/*_test.sql; do   # devices_test.sql, live_activity_test.sql, job_outcomes_test.sql, public_key_checks_test.sql
    psql_ "$url" -f "$t"
done

echo "pgbench: 8 clients x 250 register/prune calls on 16 shared tokens"
bench_out=$("$PGBENCH" -n -c 8 -j 2 -t 250 -f "$HERE/concurrency.pgbench" "$url" 2>&1) \
    || { echo "$bench_out"; exit 1; }
grep -E 'number of (transactions actually processed|failed)' <<<"$bench_out" || true
psql_ "$url" -At -c "
DO \$\$
BEGIN
  ASSERT (SELECT count(*) FROM devices WHERE app_id = 'com.example.race') <= 16, 'one row per token';
  ASSERT NOT EXISTS (SELECT FROM devices WHERE app_id = 'com.example.race'
                      AND (key_id IS DISTINCT FROM pushd_key_id(public_key)
                           OR (public_key IS NULL) <> (key_registered_at IS NULL))), 'key invariants';
END
\$\$;"
echo "pgbench: 8 clients x 250 Live Activity register/end/prune calls on 8 shared devices"
bench_out=$("$PGBENCH" -n -c 8 -j 2 -t 250 -f "$HERE/live_activity_concurrency.pgbench" "$url" 2>&1) \
    || { echo "$bench_out"; exit 1; }
grep -E 'number of (transactions actually processed|failed)' <<<"$bench_out" || true
psql_ "$url" -At -c "
DO \$\$
BEGIN
  ASSERT (SELECT count(*) FROM live_activity_start_tokens s JOIN devices d ON d.id = s.device_id
           WHERE d.app_id = 'com.example.la-race') <= 8, 'one push-to-start token per device';
  ASSERT NOT EXISTS (SELECT device_id, activity_id FROM live_activity_update_tokens
                      GROUP BY device_id, activity_id HAVING count(*) > 1), 'one update token per device and activity';
END
\$\$;"
echo "pgbench: 8 clients x 300 transactions recording overlapping key digests in random orders"
bench_out=$("$PGBENCH" -n -c 8 -j 2 -t 300 -f "$HERE/public_key_checks_concurrency.pgbench" "$url" 2>&1) \
    || { echo "$bench_out"; exit 1; }
grep -E 'number of (transactions actually processed|failed)' <<<"$bench_out" || true
grep -qE 'number of transactions actually processed: 2400/2400' <<<"$bench_out" \
    || { echo "$bench_out"; echo "recording key digests failed under concurrency" >&2; exit 1; }
echo "Schemas/sql tests: OK"
