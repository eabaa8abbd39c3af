-- 0007_public_key_checks.sql — device keys that passed pushd's full key check, remembered.
--
-- Runs inside one transaction (the migrator wraps it); no BEGIN/COMMIT here.
-- Written only by workers. Before a worker seals for a key it has not seen, it checks the key:
-- RSA of 2048, 3072 or 4096 bits, exponent 65537, and OpenSSL's public-key check
-- (EVP_PKEY_public_check: no small factors, and a Miller-Rabin test that the modulus is
-- composite and not a prime power). The last part costs about 5 ms per key, two hundred
-- envelopes, so a worker remembering only the keys in its own cache spent most of its CPU on
-- checks once a broadcast reached more devices than the cache holds. A key that passed is
-- recorded here by the SHA-256 of its text as stored in devices.public_key, and the device
-- lookup returns whether the row's key is recorded: each key is checked once by the cluster,
-- and a worker still refuses a recorded key of the wrong size or exponent (those checks cost
-- microseconds and run every time). A rotated key is new text, so it is checked again.
CREATE TABLE pushd_public_key_checks (
    digest     bytea       PRIMARY KEY CHECK (octet_length(digest) = 32),
    checked_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE pushd_public_key_checks IS
    'SHA-256 of device key texts (devices.public_key, UTF-8) that passed the full key check in a pushd worker, OpenSSL''s public-key check included. Written by workers through pushd_record_public_key_checks; rows no device uses any more go with pushd_prune_public_key_checks.';

-- Records digests (32 bytes each; anything else is refused by the table's check). Idempotent:
-- two workers checking the same key at once both succeed.
CREATE FUNCTION pushd_record_public_key_checks(p_digests bytea[]) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO pushd_public_key_checks (digest)
    SELECT DISTINCT d FROM unnest(p_digests) AS d
    ON CONFLICT (digest) DO NOTHING;
$$;

-- Deletes records no device's current key matches (keys rotated away, devices deleted),
-- checked before p_before so that a key recorded while its device row is being written is kept.
-- Returns how many went.
CREATE FUNCTION pushd_prune_public_key_checks(p_before timestamptz) RETURNS bigint
LANGUAGE sql AS $$
    WITH gone AS (
        DELETE FROM pushd_public_key_checks c
        WHERE c.checked_at < p_before
          AND NOT EXISTS (
              SELECT 1 FROM devices d
              WHERE d.public_key IS NOT NULL AND sha256(convert_to(d.public_key, 'UTF8')) = c.digest)
        RETURNING 1)
    SELECT count(*) FROM gone;
$$;
