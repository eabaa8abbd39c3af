-- Schemas/sql/tests/public_key_checks_test.sql — keys that passed the full check (0007):
-- recorded idempotently by digest, 32 bytes only, matched the way the device lookup matches
-- them, pruned once no device uses them.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

DO $$
DECLARE
    key_a text := 'MIIBCgKCAQEAchecked' || repeat('A', 300);
    key_b text := 'MIIBCgKCAQEAunused' || repeat('B', 300);
    r record;
BEGIN
    SELECT * INTO r FROM pushd_register_device('checks-1', 'android', 'demo-project', 'production', 'tok-checks-1', key_a, '1.0');
    PERFORM pushd_record_public_key_checks(ARRAY[sha256(convert_to(key_a, 'UTF8')), sha256(convert_to(key_a, 'UTF8'))]);
    PERFORM pushd_record_public_key_checks(ARRAY[sha256(convert_to(key_a, 'UTF8')), sha256(convert_to(key_b, 'UTF8'))]);
    ASSERT (SELECT count(*) FROM pushd_public_key_checks) = 2, 'one row per digest, repeats ignored';
    -- What the worker's lookup asks of a device row.
    ASSERT (SELECT EXISTS (SELECT 1 FROM pushd_public_key_checks c WHERE c.digest = sha256(convert_to(d.public_key, 'UTF8')))
            FROM devices d WHERE d.id = r.device_id), 'the device''s key is recorded';
    -- Not before p_before: nothing goes; after it, only the digest no device uses.
    ASSERT pushd_prune_public_key_checks(now() - interval '1 hour') = 0, 'recent records kept';
    ASSERT pushd_prune_public_key_checks(now() + interval '1 second') = 1, 'the unused digest goes';
    ASSERT EXISTS (SELECT 1 FROM pushd_public_key_checks WHERE digest = sha256(convert_to(key_a, 'UTF8'))), 'used digest kept';
END
$$;

-- Anything but 32 bytes is refused.
DO $$
BEGIN
    BEGIN
        PERFORM pushd_record_public_key_checks(ARRAY['\x0102'::bytea]);
        RAISE EXCEPTION 'a 2-byte digest was accepted';
    EXCEPTION WHEN check_violation THEN
        NULL;
    END;
END
$$;

-- 0008: the function inserts in digest order (no deadlock between two workers recording
-- overlapping sets); its plan sorts, and repeats within one call are still one row.
DO $$
DECLARE
    source text;
BEGIN
    SELECT prosrc INTO source FROM pg_proc WHERE proname = 'pushd_record_public_key_checks';
    ASSERT source LIKE '%ORDER BY d%', 'ordered insert';
    PERFORM pushd_record_public_key_checks(ARRAY[sha256('z'), sha256('a'), sha256('z')]);
    ASSERT (SELECT count(*) FROM pushd_public_key_checks WHERE digest IN (sha256('z'), sha256('a'))) = 2, 'two rows';
END
$$;
