-- 0001_devices.sql — device registry (PostgreSQL 15).
--
-- Runs inside one transaction (the migrator wraps it); no BEGIN/COMMIT here.
-- Contract for producers in any language: see Schemas/sql/README.md.

-- key_id is defined over the UTF-8 bytes of the public key text; make sure that is what the
-- database stores.
DO $$
BEGIN
    IF current_setting('server_encoding') <> 'UTF8' THEN
        RAISE EXCEPTION 'pushd requires a UTF8 database, this one is %', current_setting('server_encoding')
            USING ERRCODE = '55000';
    END IF;
END
$$;

-- Deterministic key identifier: the first 16 hex digits (64 bits) of SHA-256 over the UTF-8
-- bytes of the public key text exactly as registered. Rotating back to an older key yields the
-- old id again. Declared IMMUTABLE (convert_to is only STABLE in general) — this holds because
-- the database encoding is UTF8, which the block above enforces.
CREATE FUNCTION pushd_key_id(p_public_key text)
    RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN left(encode(sha256(convert_to(p_public_key, 'UTF8')), 'hex'), 16);

COMMENT ON FUNCTION pushd_key_id(text) IS
    'key_id of a public key: first 16 lowercase hex digits of sha256(utf8 bytes of the key text as registered). NULL for NULL.';

CREATE TABLE devices (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    recipient_id        text        NOT NULL,
    platform            text        NOT NULL,
    app_id              text        NOT NULL,
    environment         text        NOT NULL,
    push_token          text        NOT NULL,
    public_key          text,
    key_id              text GENERATED ALWAYS AS (pushd_key_id(public_key)) STORED,
    key_registered_at   timestamptz,
    app_version         text,
    token_registered_at timestamptz NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT devices_token_key
        UNIQUE (app_id, platform, environment, push_token),
    CONSTRAINT devices_recipient_id_check
        CHECK (char_length(recipient_id) BETWEEN 1 AND 1024),
    CONSTRAINT devices_platform_check
        CHECK (platform IN ('ios', 'android')),
    -- Bundle ids and Firebase project ids end up in the apns-topic header and the FCM URL path.
    CONSTRAINT devices_app_id_check
        CHECK (char_length(app_id) BETWEEN 1 AND 255 AND app_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]*$'),
    CONSTRAINT devices_environment_check
        CHECK (environment IN ('sandbox', 'production')),
    CONSTRAINT devices_android_environment_check
        CHECK (platform <> 'android' OR environment = 'production'),
    -- APNs device tokens are hex (stored lower-case, so one device cannot be registered twice in
    -- two spellings; they go into the request path). FCM tokens: printable ASCII, no spaces.
    CONSTRAINT devices_push_token_check
        CHECK (char_length(push_token) BETWEEN 1 AND 4096
               AND CASE platform WHEN 'ios' THEN push_token ~ '^[0-9a-f]+$'
                                 ELSE push_token ~ '^[!-~]+$' END),
    CONSTRAINT devices_public_key_check
        CHECK (public_key IS NULL OR char_length(public_key) BETWEEN 1 AND 16384),
    CONSTRAINT devices_key_registered_at_check
        CHECK ((public_key IS NULL) = (key_registered_at IS NULL)),
    CONSTRAINT devices_app_version_check
        CHECK (app_version IS NULL OR char_length(app_version) BETWEEN 1 AND 128)
);

CREATE INDEX devices_app_recipient_idx ON devices (app_id, recipient_id);
CREATE INDEX devices_recipient_idx ON devices (recipient_id);

COMMENT ON TABLE devices IS
    'One row per push token (per app, platform and environment). Write through pushd_register_device / pushd_prune_token.';
COMMENT ON COLUMN devices.id IS 'Device id; jobs may target devices by this id (recipients.device_ids).';
COMMENT ON COLUMN devices.recipient_id IS 'Opaque producer-side id of the user owning the device (1..1024 characters). May change when a token moves to another user.';
COMMENT ON COLUMN devices.platform IS '''ios'' (APNs) or ''android'' (FCM).';
COMMENT ON COLUMN devices.app_id IS 'iOS bundle id (ios) or Firebase project id (android).';
COMMENT ON COLUMN devices.environment IS 'APNs environment: ''sandbox'' or ''production''. Always ''production'' for android.';
COMMENT ON COLUMN devices.push_token IS 'APNs device token (lower-case hex) or FCM registration token (printable ASCII). At most 4096 characters.';
COMMENT ON COLUMN devices.public_key IS 'Device RSA public key exactly as the device sent it. NULL: legacy app without E2E, receives the fallback text only.';
COMMENT ON COLUMN devices.key_id IS 'Generated: pushd_key_id(public_key) — first 16 hex digits of sha256 of the key text. NULL iff public_key is NULL.';
COMMENT ON COLUMN devices.key_registered_at IS 'When the current public key was first registered for this token; kept while the same key is re-registered. NULL iff public_key is NULL.';
COMMENT ON COLUMN devices.app_version IS 'App version reported at the last registration (free text, may be NULL).';
COMMENT ON COLUMN devices.token_registered_at IS 'Last (re-)registration of this token, clock_timestamp(); only moves forward. Compared with the APNs 410 timestamp before pruning.';
COMMENT ON COLUMN devices.created_at IS 'Row creation time.';
COMMENT ON COLUMN devices.updated_at IS 'Last modification time (maintained by trigger).';

CREATE FUNCTION pushd_devices_touch() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    NEW.updated_at := clock_timestamp();
    RETURN NEW;
END
$$;

CREATE TRIGGER devices_touch_updated_at
    BEFORE UPDATE ON devices
    FOR EACH ROW EXECUTE FUNCTION pushd_devices_touch();

COMMENT ON FUNCTION pushd_devices_touch() IS 'Trigger function: sets devices.updated_at on every UPDATE.';
