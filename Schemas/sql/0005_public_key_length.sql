-- 0005_public_key_length.sql — a device key's text is capped at 2,048 characters.
--
-- The largest key a device exports is RSA-4096 as a line-wrapped PEM SubjectPublicKeyInfo:
-- about 800 characters. 0001 allowed 16,384, room for a producer to store (and every worker
-- to fetch and parse on every delivery) sixteen kilobytes of anything. The constraint is
-- replaced NOT VALID: rows already stored are left alone (a longer key is refused at delivery
-- with a key.invalid event anyway), every new or changed row is checked. pushd_register_device
-- checks 16,384 itself first; a key between the two limits is refused by this constraint with
-- SQLSTATE 23514 (check_violation), which names devices_public_key_check.
ALTER TABLE devices
    DROP CONSTRAINT devices_public_key_check,
    ADD CONSTRAINT devices_public_key_check
        CHECK (public_key IS NULL OR char_length(public_key) BETWEEN 1 AND 2048) NOT VALID;

COMMENT ON CONSTRAINT devices_public_key_check ON devices IS
    'public_key: NULL (legacy app) or 1..2048 characters; RSA-4096 as wrapped PEM is about 800.';
