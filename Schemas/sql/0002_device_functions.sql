-- 0002_device_functions.sql — registration and pruning, the write API for producers.
--
-- Runs inside one transaction (the migrator wraps it); no BEGIN/COMMIT here.
-- Invalid arguments raise SQLSTATE 22023 (invalid_parameter_value) with a readable message.

CREATE FUNCTION pushd_register_device(
    p_recipient_id text,
    p_platform     text,
    p_app_id       text,
    p_environment  text,
    p_push_token   text,
    p_public_key   text,
    p_app_version  text
)
    RETURNS TABLE (device_id bigint, key_id text, key_rotated boolean, created boolean)
    LANGUAGE plpgsql VOLATILE
AS $fn$
#variable_conflict use_variable
DECLARE
    v_environment text := p_environment;
    v_token       text := p_push_token;
    v_app_version text := nullif(p_app_version, '');
    v_key_id      text;
    v_now         timestamptz;
    v_id          bigint;
    v_old_key_id  text;
BEGIN
    IF p_recipient_id IS NULL OR p_recipient_id = '' THEN
        RAISE EXCEPTION 'pushd_register_device: recipient_id must be a non-empty string'
            USING ERRCODE = '22023';
    END IF;
    IF char_length(p_recipient_id) > 1024 THEN
        RAISE EXCEPTION 'pushd_register_device: recipient_id is longer than 1024 characters'
            USING ERRCODE = '22023';
    END IF;

    IF p_platform IS NULL OR p_platform NOT IN ('ios', 'android') THEN
        RAISE EXCEPTION 'pushd_register_device: platform must be ''ios'' or ''android'', got %',
            coalesce(quote_literal(p_platform), 'NULL')
            USING ERRCODE = '22023';
    END IF;

    IF p_app_id IS NULL OR p_app_id = '' THEN
        RAISE EXCEPTION 'pushd_register_device: app_id (iOS bundle id or Firebase project id) must be a non-empty string'
            USING ERRCODE = '22023';
    END IF;
    IF char_length(p_app_id) > 255 OR p_app_id !~ '^[A-Za-z0-9][A-Za-z0-9._-]*$' THEN
        RAISE EXCEPTION 'pushd_register_device: app_id % is not a bundle id / Firebase project id (letters, digits, ''.'', ''_'', ''-''; at most 255)',
            quote_literal(left(p_app_id, 300))
            USING ERRCODE = '22023';
    END IF;

    IF p_platform = 'android' THEN
        IF v_environment IS NULL THEN
            v_environment := 'production';
        ELSIF v_environment <> 'production' THEN
            RAISE EXCEPTION 'pushd_register_device: android devices are always environment ''production'' (FCM has no sandbox), got %',
                quote_literal(v_environment)
                USING ERRCODE = '22023';
        END IF;
    ELSIF v_environment IS NULL OR v_environment NOT IN ('sandbox', 'production') THEN
        RAISE EXCEPTION 'pushd_register_device: environment must be ''sandbox'' or ''production'', got %',
            coalesce(quote_literal(v_environment), 'NULL')
            USING ERRCODE = '22023';
    END IF;

    IF v_token IS NULL OR v_token = '' THEN
        RAISE EXCEPTION 'pushd_register_device: push_token must be a non-empty string'
            USING ERRCODE = '22023';
    END IF;
    IF char_length(v_token) > 4096 THEN
        RAISE EXCEPTION 'pushd_register_device: push_token is longer than 4096 characters'
            USING ERRCODE = '22023';
    END IF;
    IF p_platform = 'ios' THEN
        v_token := lower(v_token);
        IF v_token !~ '^[0-9a-f]+$' THEN
            RAISE EXCEPTION 'pushd_register_device: an APNs device token must be hexadecimal'
                USING ERRCODE = '22023';
        END IF;
    ELSIF v_token !~ '^[!-~]+$' THEN
        RAISE EXCEPTION 'pushd_register_device: an FCM token must be printable ASCII without spaces'
            USING ERRCODE = '22023';
    END IF;

    IF p_public_key = '' THEN
        RAISE EXCEPTION 'pushd_register_device: public_key is empty; pass NULL for a device without E2E'
            USING ERRCODE = '22023';
    END IF;
    IF char_length(p_public_key) > 16384 THEN
        RAISE EXCEPTION 'pushd_register_device: public_key is longer than 16384 characters'
            USING ERRCODE = '22023';
    END IF;
    IF char_length(v_app_version) > 128 THEN
        RAISE EXCEPTION 'pushd_register_device: app_version is longer than 128 characters'
            USING ERRCODE = '22023';
    END IF;

    v_key_id := pushd_key_id(p_public_key);
    -- clock_timestamp(), not now(): the registration time must be close to the moment the row
    -- is written, also in long transactions, because it is compared with APNs' 410 timestamp.
    v_now := clock_timestamp();

    -- Upsert on devices_token_key. The previous key_id is needed for key_rotated, and
    -- PostgreSQL 15 cannot return pre-update values from INSERT ... ON CONFLICT DO UPDATE, so:
    -- lock the existing row and update it, or insert with ON CONFLICT DO NOTHING; if a
    -- concurrent transaction inserted the same token in between, go round once more (its row
    -- is visible to the next statement).
    LOOP
        SELECT d.id, d.key_id
          INTO v_id, v_old_key_id
          FROM devices d
         WHERE d.app_id = p_app_id
           AND d.platform = p_platform
           AND d.environment = v_environment
           AND d.push_token = v_token
           FOR UPDATE;

        IF FOUND THEN
            UPDATE devices d
               SET recipient_id        = p_recipient_id,
                   public_key          = p_public_key,
                   key_registered_at   = CASE
                                             WHEN v_key_id IS NULL THEN NULL
                                             WHEN d.key_id IS NOT DISTINCT FROM v_key_id THEN d.key_registered_at
                                             ELSE v_now
                                         END,
                   app_version         = v_app_version,
                   token_registered_at = greatest(v_now, d.token_registered_at)
             WHERE d.id = v_id;

            device_id   := v_id;
            key_id      := v_key_id;
            key_rotated := v_old_key_id IS DISTINCT FROM v_key_id;
            created     := false;
            RETURN NEXT;
            RETURN;
        END IF;

        INSERT INTO devices AS d (recipient_id, platform, app_id, environment, push_token,
                                  public_key, key_registered_at, app_version,
                                  token_registered_at, created_at, updated_at)
        VALUES (p_recipient_id, p_platform, p_app_id, v_environment, v_token,
                p_public_key, CASE WHEN p_public_key IS NULL THEN NULL ELSE v_now END, v_app_version,
                v_now, v_now, v_now)
        ON CONFLICT ON CONSTRAINT devices_token_key DO NOTHING
        RETURNING d.id INTO v_id;

        IF FOUND THEN
            device_id   := v_id;
            key_id      := v_key_id;
            key_rotated := false;
            created     := true;
            RETURN NEXT;
            RETURN;
        END IF;
    END LOOP;
END
$fn$;

COMMENT ON FUNCTION pushd_register_device(text, text, text, text, text, text, text) IS
$$Register or re-register a push token. Upsert keyed on (app_id, platform, environment, push_token).
Arguments: recipient_id (opaque, 1..1024 chars), platform ('ios'|'android'), app_id (bundle id / Firebase
project id), environment ('sandbox'|'production'; NULL means 'production' for android, android+sandbox is
an error), push_token (APNs hex — stored lower-case — or FCM token; <= 4096), public_key (exactly as the
device sent it; NULL = no E2E; '' is an error), app_version (NULL or '' = unknown).
Re-registration: moves token_registered_at forward (clock_timestamp), replaces recipient_id, public_key and
app_version with the values given. A different key gets a new key_id and key_registered_at; the same key
keeps them. Returns device_id, key_id (NULL without key), key_rotated (true when an existing device''s key_id
changed, including to or from NULL; false for new devices), created (true for a new device).
Bad arguments raise SQLSTATE 22023.$$;

CREATE FUNCTION pushd_prune_token(
    p_app_id        text,
    p_platform      text,
    p_environment   text,
    p_push_token    text,
    p_invalid_since timestamptz
)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE
AS $fn$
#variable_conflict use_variable
DECLARE
    v_environment text := p_environment;
    v_token       text := p_push_token;
BEGIN
    IF p_app_id IS NULL OR p_app_id = '' THEN
        RAISE EXCEPTION 'pushd_prune_token: app_id must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    IF p_platform IS NULL OR p_platform NOT IN ('ios', 'android') THEN
        RAISE EXCEPTION 'pushd_prune_token: platform must be ''ios'' or ''android'', got %',
            coalesce(quote_literal(p_platform), 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF p_platform = 'android' AND v_environment IS NULL THEN
        v_environment := 'production';
    END IF;
    IF v_environment IS NULL OR v_environment NOT IN ('sandbox', 'production') THEN
        RAISE EXCEPTION 'pushd_prune_token: environment must be ''sandbox'' or ''production'', got %',
            coalesce(quote_literal(v_environment), 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF v_token IS NULL OR v_token = '' THEN
        RAISE EXCEPTION 'pushd_prune_token: push_token must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    IF p_platform = 'ios' THEN
        v_token := lower(v_token);
    END IF;

    -- A concurrent re-registration holds the row lock; after it commits the condition is
    -- re-evaluated against the new token_registered_at, so a token re-registered after the
    -- APNs 410 timestamp survives.
    DELETE FROM devices d
     WHERE d.app_id = p_app_id
       AND d.platform = p_platform
       AND d.environment = v_environment
       AND d.push_token = v_token
       AND (p_invalid_since IS NULL OR d.token_registered_at < p_invalid_since);
    RETURN FOUND;
END
$fn$;

COMMENT ON FUNCTION pushd_prune_token(text, text, text, text, timestamptz) IS
$$Delete the device with this token if the provider reported it invalid. p_invalid_since is the APNs 410
timestamp (NULL when the provider gives none, e.g. BadDeviceToken, ExpiredToken, FCM UNREGISTERED): with a
timestamp the device is deleted only if its token_registered_at is earlier, so a token re-registered after
that instant is kept. iOS tokens are compared case-insensitively (stored lower-case). Returns true if a row
was deleted; idempotent (false when already gone). Bad arguments raise SQLSTATE 22023.$$;
