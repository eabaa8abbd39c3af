-- Schemas/sql/tests/devices_test.sql — assertions for the migrations, run by run.sh against a
-- scratch database. Any failed ASSERT aborts with a non-zero exit code.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

-- Helper: expect an error with a given SQLSTATE; returns the message.
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

-- key_id contract, independent of the implementation: sha256 of the UTF-8 bytes, 16 hex digits.
-- sha256("hello") = 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824
DO $$
BEGIN
    ASSERT pushd_key_id('hello') = '2cf24dba5fb0a30e', 'key_id of "hello"';
    -- "é" is the two UTF-8 bytes c3 a9
    ASSERT pushd_key_id('é') = left(encode(sha256('\xc3a9'::bytea), 'hex'), 16), 'key_id uses UTF-8 bytes';
    ASSERT pushd_key_id(NULL) IS NULL, 'key_id of NULL';
END
$$;

DO $$
DECLARE
    r   record;
    r2  record;
    dev devices%ROWTYPE;
    dev2 devices%ROWTYPE;
    key_a constant text := E'-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA-A\n-----END PUBLIC KEY-----\n';
    key_b constant text := 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA-B';
    tok   constant text := 'A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E8F90';
    id_a  text;
BEGIN
    -- new iOS device with a key
    SELECT * INTO r FROM pushd_register_device('user-1', 'ios', 'com.example.app', 'production', tok, key_a, '1.0.0');
    ASSERT r.created AND NOT r.key_rotated, 'new device: created, not rotated';
    ASSERT r.key_id = pushd_key_id(key_a) AND r.key_id ~ '^[0-9a-f]{16}$', 'new device: key_id';
    id_a := r.key_id;
    SELECT * INTO dev FROM devices WHERE id = r.device_id;
    ASSERT dev.push_token = lower(tok), 'iOS token stored lower-case';
    ASSERT dev.public_key = key_a AND dev.key_registered_at IS NOT NULL, 'key stored verbatim';
    ASSERT dev.environment = 'production' AND dev.app_version = '1.0.0', 'fields stored';

    -- same key again, token spelled in lower case: same device, nothing rotated, token time moves
    SELECT * INTO r2 FROM pushd_register_device('user-1', 'ios', 'com.example.app', 'production', lower(tok), key_a, '1.0.1');
    ASSERT r2.device_id = r.device_id AND NOT r2.created AND NOT r2.key_rotated AND r2.key_id = id_a, 're-register same key';
    SELECT * INTO dev2 FROM devices WHERE id = r.device_id;
    ASSERT dev2.key_registered_at = dev.key_registered_at, 'same key keeps key_registered_at';
    ASSERT dev2.token_registered_at > dev.token_registered_at, 'token_registered_at moves forward';
    ASSERT dev2.updated_at > dev.updated_at AND dev2.created_at = dev.created_at, 'updated_at/created_at';
    ASSERT dev2.app_version = '1.0.1', 'app_version replaced';

    -- rotate to key B
    SELECT * INTO r2 FROM pushd_register_device('user-1', 'ios', 'com.example.app', 'production', tok, key_b, '1.0.1');
    ASSERT NOT r2.created AND r2.key_rotated AND r2.key_id = pushd_key_id(key_b) AND r2.key_id <> id_a, 'rotation to B';
    SELECT * INTO dev FROM devices WHERE id = r.device_id;
    ASSERT dev.key_registered_at > dev2.key_registered_at, 'rotation moves key_registered_at';

    -- rotate back to A: old id again
    SELECT * INTO r2 FROM pushd_register_device('user-1', 'ios', 'com.example.app', 'production', tok, key_a, NULL);
    ASSERT r2.key_rotated AND r2.key_id = id_a, 'rotation back to A yields the old key_id';
    ASSERT (SELECT app_version IS NULL FROM devices WHERE id = r.device_id), 'app_version NULL replaces';

    -- key removed (legacy build): key_id and key_registered_at NULL, counts as rotation
    SELECT * INTO r2 FROM pushd_register_device('user-1', 'ios', 'com.example.app', 'production', tok, NULL, '');
    ASSERT r2.key_rotated AND r2.key_id IS NULL, 'key removed';
    SELECT * INTO dev FROM devices WHERE id = r.device_id;
    ASSERT dev.public_key IS NULL AND dev.key_id IS NULL AND dev.key_registered_at IS NULL AND dev.app_version IS NULL, 'no key stored';
    SELECT * INTO r2 FROM pushd_register_device('user-1', 'ios', 'com.example.app', 'production', tok, NULL, NULL);
    ASSERT NOT r2.key_rotated, 'NULL -> NULL is not a rotation';

    -- the token moves to another user
    SELECT * INTO r2 FROM pushd_register_device('user-2', 'ios', 'com.example.app', 'production', tok, key_a, '2.0');
    ASSERT r2.device_id = r.device_id AND NOT r2.created AND r2.key_rotated, 'token moved';
    ASSERT (SELECT recipient_id FROM devices WHERE id = r.device_id) = 'user-2', 'recipient replaced';

    -- same token in sandbox or for another app is another device
    SELECT * INTO r2 FROM pushd_register_device('user-2', 'ios', 'com.example.app', 'sandbox', tok, key_a, '2.0');
    ASSERT r2.created AND r2.device_id <> r.device_id AND r2.key_id = id_a, 'sandbox is separate';
    SELECT * INTO r2 FROM pushd_register_device('user-2', 'ios', 'com.example.other', 'production', tok, NULL, NULL);
    ASSERT r2.created AND r2.key_id IS NULL, 'other app is separate';

    -- android: NULL environment means production
    SELECT * INTO r2 FROM pushd_register_device('user-3', 'android', 'example-firebase', NULL, 'fcm:APA91b-token_1', key_b, '3.0');
    ASSERT r2.created, 'android created';
    ASSERT (SELECT environment FROM devices WHERE id = r2.device_id) = 'production', 'android production';
    SELECT * INTO r2 FROM pushd_register_device('user-3', 'android', 'example-firebase', 'production', 'fcm:APA91b-token_1', key_b, '3.0');
    ASSERT NOT r2.created AND NOT r2.key_rotated, 'android re-register';
    -- FCM tokens are case-sensitive: not folded
    SELECT * INTO r2 FROM pushd_register_device('user-3', 'android', 'example-firebase', 'production', 'FCM:APA91B-TOKEN_1', key_b, '3.0');
    ASSERT r2.created, 'android tokens are case-sensitive';
END
$$;

-- argument validation: SQLSTATE 22023 with a readable message
DO $$
DECLARE
    m text;
BEGIN
    m := pg_temp.expect_error($q$SELECT pushd_register_device('u', 'web', 'com.example.app', 'production', 'abcd', NULL, NULL)$q$, '22023');
    ASSERT m LIKE '%platform must be%''web''%', m;
    m := pg_temp.expect_error($q$SELECT pushd_register_device('u', NULL, 'com.example.app', 'production', 'abcd', NULL, NULL)$q$, '22023');
    ASSERT m LIKE '%platform%NULL%', m;
    m := pg_temp.expect_error($q$SELECT pushd_register_device('u', 'android', 'proj', 'sandbox', 'tok', NULL, NULL)$q$, '22023');
    ASSERT m LIKE '%android%production%', m;
    m := pg_temp.expect_error($q$SELECT pushd_register_device('u', 'ios', 'com.example.app', NULL, 'abcd', NULL, NULL)$q$, '22023');
    ASSERT m LIKE '%environment%', m;
    m := pg_temp.expect_error($q$SELECT pushd_register_device('u', 'ios', 'com.example.app', 'staging', 'abcd', NULL, NULL)$q$, '22023');
    ASSERT m LIKE '%environment%staging%', m;
    m := pg_temp.expect_error($q$SELECT pushd_register_device('u', 'ios', 'com.example.app', 'production', '', NULL, NULL)$q$, '22023');
    ASSERT m LIKE '%push_token must be a non-empty%', m;
    m := pg_temp.expect_error($q$SELECT pushd_register_device('u', 'ios', 'com.example.app', 'production', NULL, NULL, NULL)$q$, '22023');
    m := pg_temp.expect_error($q$SELECT pushd_register_device('u', 'ios', 'com.example.app', 'production', 'abcd/../x', NULL, NULL)$q$, '22023');
    ASSERT m LIKE '%hexadecimal%', m;
    m := pg_temp.expect_error($q$SELECT pushd_register_device('u', 'android', 'proj', 'production', 'has space', NULL, NULL)$q$, '22023');
    ASSERT m LIKE '%printable ASCII%', m;
    m := pg_temp.expect_error(format('SELECT pushd_register_device(%L, %L, %L, %L, %L, NULL, NULL)', 'u', 'ios', 'com.example.app', 'production', repeat('a', 4097)), '22023');
    ASSERT m LIKE '%4096%', m;
    m := pg_temp.expect_error($q$SELECT pushd_register_device('', 'ios', 'com.example.app', 'production', 'abcd', NULL, NULL)$q$, '22023');
    ASSERT m LIKE '%recipient_id%', m;
    m := pg_temp.expect_error($q$SELECT pushd_register_device('u', 'ios', '', 'production', 'abcd', NULL, NULL)$q$, '22023');
    ASSERT m LIKE '%app_id%', m;
    m := pg_temp.expect_error($q$SELECT pushd_register_device('u', 'ios', 'com.example/../app', 'production', 'abcd', NULL, NULL)$q$, '22023');
    ASSERT m LIKE '%app_id%', m;
    m := pg_temp.expect_error($q$SELECT pushd_register_device('u', 'ios', 'com.example.app', 'production', 'abcd', '', NULL)$q$, '22023');
    ASSERT m LIKE '%public_key is empty%', m;
    m := pg_temp.expect_error(format('SELECT pushd_register_device(%L, %L, %L, %L, %L, NULL, %L)', 'u', 'ios', 'com.example.app', 'production', 'abcd', repeat('9', 129)), '22023');
    ASSERT m LIKE '%app_version%', m;
    m := pg_temp.expect_error($q$SELECT pushd_prune_token('com.example.app', 'ios', 'live', 'abcd', NULL)$q$, '22023');
    ASSERT m LIKE '%environment%', m;

    -- table constraints hold for direct writes too
    m := pg_temp.expect_error($q$INSERT INTO devices (recipient_id, platform, app_id, environment, push_token, token_registered_at)
                                 VALUES ('u', 'android', 'proj', 'sandbox', 'tok', now())$q$, '23514');
    m := pg_temp.expect_error($q$INSERT INTO devices (recipient_id, platform, app_id, environment, push_token, token_registered_at)
                                 VALUES ('u', 'ios', 'com.example.app', 'production', 'ABCD', now())$q$, '23514');
    m := pg_temp.expect_error($q$INSERT INTO devices (recipient_id, platform, app_id, environment, push_token, public_key, token_registered_at)
                                 VALUES ('u', 'ios', 'com.example.app', 'production', 'abcd', 'k', now())$q$, '23514');
    m := pg_temp.expect_error($q$INSERT INTO devices (recipient_id, platform, app_id, environment, push_token, token_registered_at, key_id)
                                 VALUES ('u', 'ios', 'com.example.app', 'production', 'abcd', now(), 'x')$q$, '428C9');
END
$$;

-- hostile strings are data, stored and hashed verbatim (NUL cannot occur: PostgreSQL text
-- rejects it — drivers report an error before the query runs)
DO $$
DECLARE
    r   record;
    dev devices%ROWTYPE;
    hostile_recipient constant text := $s$Robert'); DROP TABLE devices;-- "\" \\ \n 🙂 ｅ́ ‮rtl$s$;
    hostile_key constant text := E'key with \'quotes\' "dq" \\backslash\\ \t tab \n newline ✓ 鍵 \u0001';
    hostile_version constant text := $s$1.0'"\$s$;
BEGIN
    SELECT * INTO r FROM pushd_register_device(hostile_recipient, 'ios', 'com.example.app', 'production', 'deadbeef', hostile_key, hostile_version);
    SELECT * INTO dev FROM devices WHERE id = r.device_id;
    ASSERT dev.recipient_id = hostile_recipient, 'recipient verbatim';
    ASSERT dev.public_key = hostile_key, 'key verbatim';
    ASSERT dev.app_version = hostile_version, 'version verbatim';
    ASSERT r.key_id = left(encode(sha256(convert_to(hostile_key, 'UTF8')), 'hex'), 16), 'key_id of hostile key';
    ASSERT (SELECT count(*) FROM devices WHERE recipient_id = hostile_recipient) = 1, 'lookup by hostile recipient';
END
$$;

-- pruning
DO $$
DECLARE
    r   record;
    t0  timestamptz;
BEGIN
    SELECT * INTO r FROM pushd_register_device('user-p', 'ios', 'com.example.app', 'production', 'feedface', NULL, NULL);
    t0 := (SELECT token_registered_at FROM devices WHERE id = r.device_id);

    -- APNs says invalid since before the (re-)registration: keep
    ASSERT NOT pushd_prune_token('com.example.app', 'ios', 'production', 'feedface', t0 - interval '1 second'), 'kept: registered after 410 timestamp';
    ASSERT NOT pushd_prune_token('com.example.app', 'ios', 'production', 'feedface', t0), 'kept: equal timestamps';
    ASSERT EXISTS (SELECT FROM devices WHERE id = r.device_id), 'still there';
    -- wrong environment / app: nothing
    ASSERT NOT pushd_prune_token('com.example.app', 'ios', 'sandbox', 'feedface', NULL), 'other environment';
    ASSERT NOT pushd_prune_token('com.example.other', 'ios', 'production', 'feedface', NULL), 'other app';
    -- invalid since after the registration: delete (token given in upper case)
    ASSERT pushd_prune_token('com.example.app', 'ios', 'production', 'FEEDFACE', t0 + interval '1 millisecond'), 'pruned';
    ASSERT NOT EXISTS (SELECT FROM devices WHERE id = r.device_id), 'gone';
    -- idempotent
    ASSERT NOT pushd_prune_token('com.example.app', 'ios', 'production', 'feedface', t0 + interval '1 millisecond'), 'idempotent';

    -- no timestamp (BadDeviceToken, ExpiredToken, FCM UNREGISTERED): delete unconditionally
    SELECT * INTO r FROM pushd_register_device('user-p', 'android', 'example-firebase', NULL, 'fcm-token-to-prune', NULL, NULL);
    ASSERT pushd_prune_token('example-firebase', 'android', NULL, 'fcm-token-to-prune', NULL), 'android pruned';
    ASSERT NOT pushd_prune_token('example-firebase', 'android', 'production', 'fcm-token-to-prune', NULL), 'android idempotent';
END
$$;

-- views
DO $$
BEGIN
    ASSERT (SELECT devices FROM pushd_device_stats WHERE app_id = 'com.example.app' AND platform = 'ios' AND environment = 'production') = 2, 'stats devices';
    ASSERT (SELECT legacy_devices FROM pushd_device_stats WHERE app_id = 'com.example.app' AND platform = 'ios' AND environment = 'production') = 0, 'stats legacy';
    ASSERT (SELECT count(*) FROM pushd_stale_devices) = 0, 'no stale devices';
    ASSERT (SELECT devices FROM pushd_recipient_device_counts WHERE app_id = 'com.example.app' AND recipient_id = 'user-2') = 2, 'recipient counts (production + sandbox)';
END
$$;

\echo devices_test.sql: all assertions passed

-- 0005: a key's text is capped at 2,048 characters (RSA-4096 PEM is about 800).
DO $$
DECLARE
    v_message text;
BEGIN
    PERFORM pushd_register_device('cap-user', 'ios', 'com.example.cap', 'production', 'ab01',
                                  repeat('k', 2048), NULL);
    v_message := pg_temp.expect_error(
        $sql$SELECT pushd_register_device('cap-user', 'ios', 'com.example.cap', 'production', 'ab02',
                                          repeat('k', 2049), NULL)$sql$, '23514');
    ASSERT v_message LIKE '%devices_public_key_check%', v_message;
    DELETE FROM devices WHERE app_id = 'com.example.cap';
END
$$;
