-- Schemas/sql/tests/live_activity_test.sql — assertions for 0004_live_activity_tokens.sql, run
-- by run.sh against a scratch database after devices_test.sql. Any failed ASSERT aborts with a
-- non-zero exit code.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

CREATE FUNCTION pg_temp.expect_error(p_sql text, p_sqlstate text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE p_sql;
    RAISE EXCEPTION 'expected SQLSTATE % from: %', p_sqlstate, p_sql;
EXCEPTION WHEN OTHERS THEN
    IF SQLSTATE <> p_sqlstate THEN
        RAISE EXCEPTION 'expected SQLSTATE %, got % (%) from: %', p_sqlstate, SQLSTATE, SQLERRM, p_sql;
    END IF;
    RETURN SQLERRM;
END
$$;

-- Devices used below: two recipients, one with two iOS devices (one without key), an android
-- device, and the same device token in sandbox.
DO $$
BEGIN
    PERFORM pushd_register_device('la-user-1', 'ios', 'com.example.la', 'production', 'AA01', 'key-1', '1.0');
    PERFORM pushd_register_device('la-user-1', 'ios', 'com.example.la', 'production', 'aa02', NULL, '1.0');
    PERFORM pushd_register_device('la-user-2', 'ios', 'com.example.la', 'production', 'aa03', 'key-3', '1.0');
    PERFORM pushd_register_device('la-user-1', 'android', 'example-la', NULL, 'fcm-la-1', 'key-a', '1.0');
    PERFORM pushd_register_device('la-user-1', 'ios', 'com.example.la', 'sandbox', 'aa01', 'key-1', '1.0');
END
$$;

-- push-to-start tokens: register, re-register, replace
DO $$
DECLARE
    r  record;
    r2 record;
    d1 bigint := (SELECT id FROM devices WHERE push_token = 'aa01' AND environment = 'production');
    t0 timestamptz;
    u0 timestamptz;
BEGIN
    SELECT * INTO r FROM pushd_register_push_to_start_token('com.example.la', 'production', 'aa01', 'B0B0');
    ASSERT r.device_id = d1 AND r.created AND NOT r.replaced, 'first push-to-start token';
    ASSERT (SELECT token FROM live_activity_start_tokens WHERE device_id = d1) = 'b0b0', 'stored lower-case';
    SELECT token_registered_at, updated_at INTO t0, u0 FROM live_activity_start_tokens WHERE device_id = d1;

    SELECT * INTO r2 FROM pushd_register_push_to_start_token('com.example.la', 'production', 'AA01', 'b0b0');
    ASSERT r2.device_id = d1 AND NOT r2.created AND NOT r2.replaced, 'same token again (device token in upper case)';
    ASSERT (SELECT token_registered_at FROM live_activity_start_tokens WHERE device_id = d1) > t0, 'registration time moves forward';
    ASSERT (SELECT updated_at FROM live_activity_start_tokens WHERE device_id = d1) > u0, 'updated_at maintained';

    SELECT * INTO r2 FROM pushd_register_push_to_start_token('com.example.la', 'production', 'aa01', 'b1b1');
    ASSERT NOT r2.created AND r2.replaced, 'a new token replaces the old one';
    ASSERT (SELECT count(*) FROM live_activity_start_tokens WHERE device_id = d1) = 1, 'one per device';
    ASSERT (SELECT token FROM live_activity_start_tokens WHERE device_id = d1) = 'b1b1', 'replaced';

    -- sandbox is another device
    SELECT * INTO r2 FROM pushd_register_push_to_start_token('com.example.la', 'sandbox', 'aa01', 'b2b2');
    ASSERT r2.created AND r2.device_id <> d1, 'sandbox device is separate';
    PERFORM pushd_register_push_to_start_token('com.example.la', 'production', 'aa03', 'b3b3');
END
$$;

-- activity update tokens: register, replace, one per device and activity
DO $$
DECLARE
    r  record;
    d1 bigint := (SELECT id FROM devices WHERE push_token = 'aa01' AND environment = 'production');
    d2 bigint := (SELECT id FROM devices WHERE push_token = 'aa02');
    d3 bigint := (SELECT id FROM devices WHERE push_token = 'aa03');
BEGIN
    SELECT * INTO r FROM pushd_register_activity_token('com.example.la', 'production', 'aa01', 'meeting-77', 'C1C1');
    ASSERT r.device_id = d1 AND r.created AND NOT r.replaced, 'first update token';
    SELECT * INTO r FROM pushd_register_activity_token('com.example.la', 'production', 'aa01', 'meeting-77', 'c1c2');
    ASSERT NOT r.created AND r.replaced, 'rotated update token replaces';
    SELECT * INTO r FROM pushd_register_activity_token('com.example.la', 'production', 'aa01', 'meeting-77', 'c1c2');
    ASSERT NOT r.created AND NOT r.replaced, 'same update token again';
    SELECT * INTO r FROM pushd_register_activity_token('com.example.la', 'production', 'aa01', 'meeting-78', 'c1c3');
    ASSERT r.created, 'another activity on the same device';
    PERFORM pushd_register_activity_token('com.example.la', 'production', 'aa02', 'meeting-77', 'c2c1');
    PERFORM pushd_register_activity_token('com.example.la', 'production', 'aa03', 'meeting-77', 'c3c1');
    ASSERT (SELECT count(*) FROM live_activity_update_tokens WHERE activity_id = 'meeting-77') = 3, 'three devices in meeting-77';
    ASSERT (SELECT token FROM live_activity_update_tokens WHERE device_id = d1 AND activity_id = 'meeting-77') = 'c1c2', 'current token';
END
$$;

-- the worker's lookup
DO $$
DECLARE
    d1 bigint := (SELECT id FROM devices WHERE push_token = 'aa01' AND environment = 'production');
    d2 bigint := (SELECT id FROM devices WHERE push_token = 'aa02');
    d3 bigint := (SELECT id FROM devices WHERE push_token = 'aa03');
    ds bigint := (SELECT id FROM devices WHERE push_token = 'aa01' AND environment = 'sandbox');
    n  integer;
BEGIN
    -- start: every iOS device of the recipients, token NULL where none; android not included
    ASSERT (SELECT array_agg(device_id ORDER BY device_id) FROM pushd_live_activity_targets('com.example.la', 'push_to_start', NULL, ARRAY['la-user-1'], NULL))
           = ARRAY[d1, d2, ds], 'start targets of la-user-1';
    ASSERT (SELECT token FROM pushd_live_activity_targets('com.example.la', 'push_to_start', NULL, ARRAY['la-user-1'], NULL) WHERE device_id = d2) IS NULL, 'no push-to-start token';
    ASSERT (SELECT token || '/' || environment || '/' || key_id FROM pushd_live_activity_targets('com.example.la', 'push_to_start', 'meeting-77', ARRAY['la-user-1'], NULL) WHERE device_id = ds)
           = 'b2b2/sandbox/' || pushd_key_id('key-1'), 'token, environment and key';
    -- update: the activity's tokens
    SELECT count(*) INTO n FROM pushd_live_activity_targets('com.example.la', 'activity_update', 'meeting-77', ARRAY['la-user-1', 'la-user-2'], NULL) WHERE token IS NOT NULL;
    ASSERT n = 3, 'three update tokens for meeting-77';
    ASSERT (SELECT token FROM pushd_live_activity_targets('com.example.la', 'activity_update', 'meeting-78', NULL, ARRAY[d1, d2]) WHERE device_id = d1) = 'c1c3', 'by device ids';
    ASSERT (SELECT public_key IS NULL AND key_id IS NULL FROM pushd_live_activity_targets('com.example.la', 'activity_update', 'meeting-77', NULL, ARRAY[d2])), 'device without key';
    ASSERT NOT EXISTS (SELECT FROM pushd_live_activity_targets('com.example.other', 'activity_update', 'meeting-77', ARRAY['la-user-1'], NULL)), 'other app: nothing';
END
$$;

-- pruning honours the 410 timestamp exactly as pushd_prune_token
DO $$
DECLARE
    d1 bigint := (SELECT id FROM devices WHERE push_token = 'aa01' AND environment = 'production');
    t0 timestamptz;
BEGIN
    t0 := (SELECT token_registered_at FROM live_activity_start_tokens WHERE device_id = d1);
    ASSERT NOT pushd_prune_live_activity_token('com.example.la', 'production', 'push_to_start', 'b1b1', t0 - interval '1 second'), 'kept: registered after the 410 timestamp';
    ASSERT NOT pushd_prune_live_activity_token('com.example.la', 'production', 'push_to_start', 'b1b1', t0), 'kept: equal timestamps';
    ASSERT NOT pushd_prune_live_activity_token('com.example.la', 'sandbox', 'push_to_start', 'b1b1', NULL), 'other environment';
    ASSERT NOT pushd_prune_live_activity_token('com.example.other', 'production', 'push_to_start', 'b1b1', NULL), 'other app';
    ASSERT NOT pushd_prune_live_activity_token('com.example.la', 'production', 'activity_update', 'b1b1', NULL), 'other kind';
    ASSERT pushd_prune_live_activity_token('com.example.la', 'production', 'push_to_start', 'B1B1', t0 + interval '1 millisecond'), 'pruned: registered before the 410 timestamp';
    ASSERT NOT EXISTS (SELECT FROM live_activity_start_tokens WHERE device_id = d1), 'gone';
    ASSERT EXISTS (SELECT FROM devices WHERE id = d1), 'the device itself stays';
    ASSERT NOT pushd_prune_live_activity_token('com.example.la', 'production', 'push_to_start', 'b1b1', NULL), 'idempotent';

    t0 := (SELECT token_registered_at FROM live_activity_update_tokens WHERE device_id = d1 AND activity_id = 'meeting-78');
    ASSERT NOT pushd_prune_live_activity_token('com.example.la', 'production', 'activity_update', 'c1c3', t0 - interval '1 millisecond'), 'update token kept';
    ASSERT pushd_prune_live_activity_token('com.example.la', 'production', 'activity_update', 'c1c3', NULL), 'no timestamp: pruned';
    ASSERT NOT EXISTS (SELECT FROM live_activity_update_tokens WHERE device_id = d1 AND activity_id = 'meeting-78'), 'update token gone';
    -- a replaced token is not pruned by an event about the old one
    ASSERT NOT pushd_prune_live_activity_token('com.example.la', 'production', 'activity_update', 'c1c1', NULL), 'old token already replaced';
    ASSERT EXISTS (SELECT FROM live_activity_update_tokens WHERE device_id = d1 AND activity_id = 'meeting-77'), 'current token kept';
END
$$;

-- ending an activity removes its tokens (for some devices, then all)
DO $$
DECLARE
    d1 bigint := (SELECT id FROM devices WHERE push_token = 'aa01' AND environment = 'production');
    d2 bigint := (SELECT id FROM devices WHERE push_token = 'aa02');
BEGIN
    PERFORM pushd_register_activity_token('com.example.la', 'production', 'aa01', 'meeting-79', 'd1d1');
    ASSERT pushd_end_activity('com.example.other', 'meeting-77') = 0, 'other app: nothing';
    ASSERT pushd_end_activity('com.example.la', 'meeting-77', ARRAY[d1, d2]) = 2, 'two devices done';
    ASSERT (SELECT count(*) FROM live_activity_update_tokens WHERE activity_id = 'meeting-77') = 1, 'one device still waits';
    ASSERT pushd_end_activity('com.example.la', 'meeting-77') = 1, 'the rest';
    ASSERT pushd_end_activity('com.example.la', 'meeting-77') = 0, 'idempotent';
    ASSERT EXISTS (SELECT FROM live_activity_update_tokens WHERE activity_id = 'meeting-79'), 'other activities untouched';
END
$$;

-- pruning the device removes its Live Activity tokens (ON DELETE CASCADE)
DO $$
DECLARE
    d1 bigint := (SELECT id FROM devices WHERE push_token = 'aa01' AND environment = 'production');
BEGIN
    PERFORM pushd_register_push_to_start_token('com.example.la', 'production', 'aa01', 'b4b4');
    ASSERT pushd_prune_token('com.example.la', 'ios', 'production', 'aa01', NULL), 'device pruned';
    ASSERT NOT EXISTS (SELECT FROM live_activity_start_tokens WHERE device_id = d1), 'push-to-start token cascaded';
    ASSERT NOT EXISTS (SELECT FROM live_activity_update_tokens WHERE device_id = d1), 'update tokens cascaded';
END
$$;

-- argument checks: SQLSTATE 22023, unknown device P0002, table constraints 23514
DO $$
DECLARE
    m text;
BEGIN
    m := pg_temp.expect_error($q$SELECT pushd_register_push_to_start_token('com.example.la', 'production', 'ffff', 'b5b5')$q$, 'P0002');
    ASSERT m LIKE '%register the device first%', m;
    m := pg_temp.expect_error($q$SELECT pushd_register_push_to_start_token('example-la', 'production', 'fcm-la-1', 'b5b5')$q$, '22023');
    ASSERT m LIKE '%device_token must be hexadecimal%', m;
    m := pg_temp.expect_error($q$SELECT pushd_register_push_to_start_token('com.example.la', 'staging', 'aa02', 'b5b5')$q$, '22023');
    ASSERT m LIKE '%environment%staging%', m;
    m := pg_temp.expect_error($q$SELECT pushd_register_push_to_start_token('com.example/../la', 'production', 'aa02', 'b5b5')$q$, '22023');
    ASSERT m LIKE '%app_id%', m;
    m := pg_temp.expect_error($q$SELECT pushd_register_push_to_start_token('com.example.la', 'production', 'aa02', '')$q$, '22023');
    ASSERT m LIKE '%push_to_start_token must be a non-empty%', m;
    m := pg_temp.expect_error($q$SELECT pushd_register_push_to_start_token('com.example.la', 'production', 'aa02', 'xyz')$q$, '22023');
    ASSERT m LIKE '%push_to_start_token must be hexadecimal%', m;
    m := pg_temp.expect_error(format('SELECT pushd_register_push_to_start_token(%L, %L, %L, %L)', 'com.example.la', 'production', 'aa02', repeat('a', 4097)), '22023');
    ASSERT m LIKE '%4096%', m;
    m := pg_temp.expect_error($q$SELECT pushd_register_activity_token('com.example.la', 'production', 'aa02', 'has space', 'c5c5')$q$, '22023');
    ASSERT m LIKE '%activity_id%', m;
    m := pg_temp.expect_error(format('SELECT pushd_register_activity_token(%L, %L, %L, %L, %L)', 'com.example.la', 'production', 'aa02', repeat('m', 257), 'c5c5'), '22023');
    ASSERT m LIKE '%activity_id%256%', m;
    m := pg_temp.expect_error($q$SELECT pushd_register_activity_token('com.example.la', 'production', 'aa02', NULL, 'c5c5')$q$, '22023');
    m := pg_temp.expect_error($q$SELECT pushd_register_activity_token('com.example.la', 'production', 'aa02', 'm-1', NULL)$q$, '22023');
    ASSERT m LIKE '%activity_token%', m;
    m := pg_temp.expect_error($q$SELECT pushd_end_activity('com.example.la', '')$q$, '22023');
    m := pg_temp.expect_error($q$SELECT pushd_prune_live_activity_token('com.example.la', 'production', 'device', 'aa02', NULL)$q$, '22023');
    ASSERT m LIKE '%kind must be%', m;
    m := pg_temp.expect_error($q$SELECT * FROM pushd_live_activity_targets('com.example.la', 'push_to_start', NULL, ARRAY['u'], ARRAY[1::bigint])$q$, '22023');
    ASSERT m LIKE '%exactly one%', m;
    m := pg_temp.expect_error($q$SELECT * FROM pushd_live_activity_targets('com.example.la', 'activity_update', NULL, ARRAY['u'], NULL)$q$, '22023');
    ASSERT m LIKE '%activity_id%', m;
    m := pg_temp.expect_error($q$SELECT * FROM pushd_live_activity_targets('com.example.la', 'start', NULL, ARRAY['u'], NULL)$q$, '22023');
    m := pg_temp.expect_error($q$INSERT INTO live_activity_update_tokens (device_id, activity_id, token, token_registered_at)
                                 SELECT id, 'm-1', 'ABCD', now() FROM devices WHERE push_token = 'aa02'$q$, '23514');
    m := pg_temp.expect_error($q$INSERT INTO live_activity_start_tokens (device_id, token, token_registered_at)
                                 SELECT id, '', now() FROM devices WHERE push_token = 'aa02'$q$, '23514');
END
$$;

\echo live_activity_test.sql: all assertions passed
