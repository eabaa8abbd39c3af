-- 0004_live_activity_tokens.sql — Live Activity tokens (issue 11): push-to-start tokens per
-- device and update tokens per device and activity, with the functions producers, workers and
-- the cleanup consumer call.
--
-- Runs inside one transaction (the migrator wraps it); no BEGIN/COMMIT here.
-- Invalid arguments raise SQLSTATE 22023 (invalid_parameter_value); an unknown device raises
-- P0002 (no_data_found). Contract: Schemas/sql/README.md, "Live Activity tokens".
--
-- Both kinds of token belong to a row of `devices` (an iOS device registered with
-- pushd_register_device): the recipient, the environment and the E2E key come from there, and
-- pruning the device (its APNs token died: app uninstalled) removes its Live Activity tokens
-- too (ON DELETE CASCADE).

CREATE TABLE live_activity_start_tokens (
    device_id           bigint      PRIMARY KEY REFERENCES devices (id) ON DELETE CASCADE,
    token               text        NOT NULL,
    token_registered_at timestamptz NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),

    -- APNs tokens are hex, stored lower-case (they go into the request path).
    CONSTRAINT live_activity_start_tokens_token_check
        CHECK (char_length(token) BETWEEN 1 AND 4096 AND token ~ '^[0-9a-f]+$')
);

CREATE INDEX live_activity_start_tokens_token_idx ON live_activity_start_tokens (token);

COMMENT ON TABLE live_activity_start_tokens IS
    'Push-to-start token (iOS 17.2+, ActivityKit pushToStartToken) of an iOS device: at most one per device, i.e. per app, environment and device token. Write through pushd_register_push_to_start_token / pushd_prune_live_activity_token.';
COMMENT ON COLUMN live_activity_start_tokens.device_id IS 'devices.id of the iOS device (same app and environment). Deleting the device deletes this row.';
COMMENT ON COLUMN live_activity_start_tokens.token IS 'Push-to-start token, lower-case hex, at most 4096 characters.';
COMMENT ON COLUMN live_activity_start_tokens.token_registered_at IS 'Last (re-)registration, clock_timestamp(); only moves forward. Compared with the APNs 410 timestamp before pruning.';

CREATE TABLE live_activity_update_tokens (
    id                  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    device_id           bigint      NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    activity_id         text        NOT NULL,
    token               text        NOT NULL,
    token_registered_at timestamptz NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT live_activity_update_tokens_device_activity_key UNIQUE (device_id, activity_id),
    -- The producer's own id for the activity (a meeting id): same rule as job_id.
    CONSTRAINT live_activity_update_tokens_activity_id_check
        CHECK (char_length(activity_id) BETWEEN 1 AND 256 AND activity_id ~ '^[!-~]+$'),
    CONSTRAINT live_activity_update_tokens_token_check
        CHECK (char_length(token) BETWEEN 1 AND 4096 AND token ~ '^[0-9a-f]+$')
);

CREATE INDEX live_activity_update_tokens_activity_idx ON live_activity_update_tokens (activity_id);
CREATE INDEX live_activity_update_tokens_token_idx ON live_activity_update_tokens (token);

COMMENT ON TABLE live_activity_update_tokens IS
    'Update token of a running Live Activity (ActivityKit pushTokenUpdates) on an iOS device: one per device and activity id. Write through pushd_register_activity_token / pushd_end_activity / pushd_prune_live_activity_token.';
COMMENT ON COLUMN live_activity_update_tokens.device_id IS 'devices.id of the iOS device. Deleting the device deletes its activity tokens.';
COMMENT ON COLUMN live_activity_update_tokens.activity_id IS 'The producer''s id for the activity (e.g. the meeting id), as in the job''s live_activity.activity_id: 1..256 printable ASCII, no spaces.';
COMMENT ON COLUMN live_activity_update_tokens.token IS 'Activity update token, lower-case hex, at most 4096 characters.';
COMMENT ON COLUMN live_activity_update_tokens.token_registered_at IS 'Last (re-)registration, clock_timestamp(); only moves forward. Compared with the APNs 410 timestamp before pruning.';

CREATE TRIGGER live_activity_start_tokens_touch_updated_at
    BEFORE UPDATE ON live_activity_start_tokens
    FOR EACH ROW EXECUTE FUNCTION pushd_devices_touch();
CREATE TRIGGER live_activity_update_tokens_touch_updated_at
    BEFORE UPDATE ON live_activity_update_tokens
    FOR EACH ROW EXECUTE FUNCTION pushd_devices_touch();

-- Shared argument checks. Returns the lower-cased token; raises 22023 naming the caller.
CREATE FUNCTION pushd_live_activity_check_token(p_caller text, p_name text, p_token text)
    RETURNS text
    LANGUAGE plpgsql IMMUTABLE
AS $fn$
BEGIN
    IF p_token IS NULL OR p_token = '' THEN
        RAISE EXCEPTION '%: % must be a non-empty string', p_caller, p_name USING ERRCODE = '22023';
    END IF;
    IF char_length(p_token) > 4096 THEN
        RAISE EXCEPTION '%: % is longer than 4096 characters', p_caller, p_name USING ERRCODE = '22023';
    END IF;
    IF lower(p_token) !~ '^[0-9a-f]+$' THEN
        RAISE EXCEPTION '%: % must be hexadecimal (an APNs token)', p_caller, p_name USING ERRCODE = '22023';
    END IF;
    RETURN lower(p_token);
END
$fn$;

CREATE FUNCTION pushd_live_activity_check_scope(p_caller text, p_app_id text, p_environment text)
    RETURNS void
    LANGUAGE plpgsql IMMUTABLE
AS $fn$
BEGIN
    IF p_app_id IS NULL OR p_app_id = '' OR char_length(p_app_id) > 255
       OR p_app_id !~ '^[A-Za-z0-9][A-Za-z0-9._-]*$' THEN
        RAISE EXCEPTION '%: app_id must be an iOS bundle id (letters, digits, ''.'', ''_'', ''-''; at most 255), got %',
            p_caller, coalesce(quote_literal(left(p_app_id, 300)), 'NULL') USING ERRCODE = '22023';
    END IF;
    IF p_environment IS NULL OR p_environment NOT IN ('sandbox', 'production') THEN
        RAISE EXCEPTION '%: environment must be ''sandbox'' or ''production'', got %',
            p_caller, coalesce(quote_literal(p_environment), 'NULL') USING ERRCODE = '22023';
    END IF;
END
$fn$;

CREATE FUNCTION pushd_live_activity_check_activity_id(p_caller text, p_activity_id text)
    RETURNS void
    LANGUAGE plpgsql IMMUTABLE
AS $fn$
BEGIN
    IF p_activity_id IS NULL OR p_activity_id = '' THEN
        RAISE EXCEPTION '%: activity_id must be a non-empty string', p_caller USING ERRCODE = '22023';
    END IF;
    IF char_length(p_activity_id) > 256 OR p_activity_id !~ '^[!-~]+$' THEN
        RAISE EXCEPTION '%: activity_id must be 1..256 printable ASCII characters without spaces', p_caller
            USING ERRCODE = '22023';
    END IF;
END
$fn$;

-- The iOS device a Live Activity token is registered for, locked against concurrent
-- registrations of the same device (FOR NO KEY UPDATE: serialises them, does not block
-- foreign-key checks or readers).
CREATE FUNCTION pushd_live_activity_device(p_caller text, p_app_id text, p_environment text, p_device_token text)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE
AS $fn$
DECLARE
    v_id bigint;
BEGIN
    SELECT d.id INTO v_id
      FROM devices d
     WHERE d.app_id = p_app_id AND d.platform = 'ios' AND d.environment = p_environment
       AND d.push_token = p_device_token
       FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: no iOS device with this device token for app % in %; register the device first (pushd_register_device)',
            p_caller, quote_literal(p_app_id), p_environment USING ERRCODE = 'P0002';
    END IF;
    RETURN v_id;
END
$fn$;

CREATE FUNCTION pushd_register_push_to_start_token(
    p_app_id             text,
    p_environment        text,
    p_device_token       text,
    p_push_to_start_token text
)
    RETURNS TABLE (device_id bigint, replaced boolean, created boolean)
    LANGUAGE plpgsql VOLATILE
AS $fn$
#variable_conflict use_variable
DECLARE
    c_caller constant text := 'pushd_register_push_to_start_token';
    v_device_token text;
    v_token        text;
    v_device_id    bigint;
    v_old_token    text;
    v_now          timestamptz;
BEGIN
    PERFORM pushd_live_activity_check_scope(c_caller, p_app_id, p_environment);
    v_device_token := pushd_live_activity_check_token(c_caller, 'device_token', p_device_token);
    v_token := pushd_live_activity_check_token(c_caller, 'push_to_start_token', p_push_to_start_token);
    v_device_id := pushd_live_activity_device(c_caller, p_app_id, p_environment, v_device_token);
    -- clock_timestamp(): compared with APNs' 410 timestamp, as devices.token_registered_at.
    v_now := clock_timestamp();

    SELECT s.token INTO v_old_token FROM live_activity_start_tokens s WHERE s.device_id = v_device_id;
    IF FOUND THEN
        UPDATE live_activity_start_tokens s
           SET token = v_token,
               token_registered_at = greatest(v_now, s.token_registered_at)
         WHERE s.device_id = v_device_id;
        device_id := v_device_id;
        replaced := v_old_token <> v_token;
        created := false;
    ELSE
        INSERT INTO live_activity_start_tokens (device_id, token, token_registered_at, created_at, updated_at)
        VALUES (v_device_id, v_token, v_now, v_now, v_now);
        device_id := v_device_id;
        replaced := false;
        created := true;
    END IF;
    RETURN NEXT;
END
$fn$;

COMMENT ON FUNCTION pushd_register_push_to_start_token(text, text, text, text) IS
$$Register or replace the push-to-start token (iOS 17.2+) of an iOS device, identified like the device itself:
app_id (bundle id), environment ('sandbox'|'production') and the device's APNs token (as given to
pushd_register_device; case-insensitive). One token per device: a new token replaces the old one. Re-registering
moves token_registered_at forward (clock_timestamp), so a token re-registered after an APNs 410 timestamp is kept.
Returns device_id, replaced (an existing different token was replaced), created (first token of this device).
Bad arguments raise SQLSTATE 22023; an unknown device raises P0002.$$;

CREATE FUNCTION pushd_register_activity_token(
    p_app_id         text,
    p_environment    text,
    p_device_token   text,
    p_activity_id    text,
    p_activity_token text
)
    RETURNS TABLE (device_id bigint, replaced boolean, created boolean)
    LANGUAGE plpgsql VOLATILE
AS $fn$
#variable_conflict use_variable
DECLARE
    c_caller constant text := 'pushd_register_activity_token';
    v_device_token text;
    v_token        text;
    v_device_id    bigint;
    v_old_token    text;
    v_now          timestamptz;
BEGIN
    PERFORM pushd_live_activity_check_scope(c_caller, p_app_id, p_environment);
    v_device_token := pushd_live_activity_check_token(c_caller, 'device_token', p_device_token);
    PERFORM pushd_live_activity_check_activity_id(c_caller, p_activity_id);
    v_token := pushd_live_activity_check_token(c_caller, 'activity_token', p_activity_token);
    v_device_id := pushd_live_activity_device(c_caller, p_app_id, p_environment, v_device_token);
    v_now := clock_timestamp();

    SELECT u.token INTO v_old_token
      FROM live_activity_update_tokens u
     WHERE u.device_id = v_device_id AND u.activity_id = p_activity_id;
    IF FOUND THEN
        UPDATE live_activity_update_tokens u
           SET token = v_token,
               token_registered_at = greatest(v_now, u.token_registered_at)
         WHERE u.device_id = v_device_id AND u.activity_id = p_activity_id;
        device_id := v_device_id;
        replaced := v_old_token <> v_token;
        created := false;
    ELSE
        INSERT INTO live_activity_update_tokens (device_id, activity_id, token, token_registered_at, created_at, updated_at)
        VALUES (v_device_id, p_activity_id, v_token, v_now, v_now, v_now);
        device_id := v_device_id;
        replaced := false;
        created := true;
    END IF;
    RETURN NEXT;
END
$fn$;

COMMENT ON FUNCTION pushd_register_activity_token(text, text, text, text, text) IS
$$Register or replace the update token of a running Live Activity on an iOS device: app_id, environment, the
device's APNs token (case-insensitive), activity_id (the producer's id for the activity, e.g. the meeting id;
1..256 printable ASCII) and the activity's push token. One token per device and activity: a new token (iOS rotates
them) replaces the old one. Returns device_id, replaced, created. Bad arguments raise SQLSTATE 22023; an unknown
device raises P0002.$$;

CREATE FUNCTION pushd_end_activity(
    p_app_id      text,
    p_activity_id text,
    p_device_ids  bigint[] DEFAULT NULL
)
    RETURNS integer
    LANGUAGE plpgsql VOLATILE
AS $fn$
#variable_conflict use_variable
DECLARE
    c_caller constant text := 'pushd_end_activity';
    v_count integer;
BEGIN
    IF p_app_id IS NULL OR p_app_id = '' THEN
        RAISE EXCEPTION '%: app_id must be a non-empty string', c_caller USING ERRCODE = '22023';
    END IF;
    PERFORM pushd_live_activity_check_activity_id(c_caller, p_activity_id);
    IF p_device_ids IS NOT NULL AND cardinality(p_device_ids) > 10000 THEN
        RAISE EXCEPTION '%: at most 10000 device_ids', c_caller USING ERRCODE = '22023';
    END IF;

    DELETE FROM live_activity_update_tokens u
     USING devices d
     WHERE d.id = u.device_id
       AND d.app_id = p_app_id
       AND u.activity_id = p_activity_id
       AND (p_device_ids IS NULL OR u.device_id = ANY (p_device_ids));
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END
$fn$;

COMMENT ON FUNCTION pushd_end_activity(text, text, bigint[]) IS
$$An activity ended: delete its update tokens. app_id and activity_id name the activity; device_ids (optional)
limits it to these devices (the worker passes the devices its end push is done with, so that devices still
waiting for a retry keep their token); NULL = every device of the app. Returns the number of tokens deleted;
idempotent. Bad arguments raise SQLSTATE 22023.$$;

CREATE FUNCTION pushd_prune_live_activity_token(
    p_app_id        text,
    p_environment   text,
    p_kind          text,
    p_token         text,
    p_invalid_since timestamptz
)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE
AS $fn$
#variable_conflict use_variable
DECLARE
    c_caller constant text := 'pushd_prune_live_activity_token';
    v_token text;
BEGIN
    PERFORM pushd_live_activity_check_scope(c_caller, p_app_id, p_environment);
    v_token := pushd_live_activity_check_token(c_caller, 'token', p_token);

    -- As pushd_prune_token: a concurrent re-registration holds the row lock; once it commits
    -- the condition is evaluated again on the new row (new token_registered_at, or a new
    -- token altogether), so a token re-registered after the 410 timestamp survives.
    IF p_kind = 'push_to_start' THEN
        DELETE FROM live_activity_start_tokens s
         USING devices d
         WHERE d.id = s.device_id
           AND d.app_id = p_app_id AND d.platform = 'ios' AND d.environment = p_environment
           AND s.token = v_token
           AND (p_invalid_since IS NULL OR s.token_registered_at < p_invalid_since);
    ELSIF p_kind = 'activity_update' THEN
        DELETE FROM live_activity_update_tokens u
         USING devices d
         WHERE d.id = u.device_id
           AND d.app_id = p_app_id AND d.platform = 'ios' AND d.environment = p_environment
           AND u.token = v_token
           AND (p_invalid_since IS NULL OR u.token_registered_at < p_invalid_since);
    ELSE
        RAISE EXCEPTION '%: kind must be ''push_to_start'' or ''activity_update'', got %',
            c_caller, coalesce(quote_literal(p_kind), 'NULL') USING ERRCODE = '22023';
    END IF;
    RETURN FOUND;
END
$fn$;

COMMENT ON FUNCTION pushd_prune_live_activity_token(text, text, text, text, timestamptz) IS
$$Delete a Live Activity token that APNs reported invalid (the cleanup consumer calls it for token.invalid events
with token_kind push_to_start or activity_update). kind: 'push_to_start' | 'activity_update'. p_invalid_since is
the APNs 410 timestamp (NULL when APNs gives none, e.g. BadDeviceToken, ExpiredToken): with a timestamp the token
is deleted only if its token_registered_at is earlier, exactly as pushd_prune_token. Tokens are compared
case-insensitively. Returns true if a row was deleted; idempotent. Bad arguments raise SQLSTATE 22023.$$;

CREATE FUNCTION pushd_live_activity_targets(
    p_app_id        text,
    p_kind          text,
    p_activity_id   text,
    p_recipient_ids text[],
    p_device_ids    bigint[]
)
    RETURNS TABLE (device_id bigint, recipient_id text, environment text, token text,
                   token_registered_at timestamptz, public_key text, key_id text)
    LANGUAGE plpgsql STABLE
AS $fn$
#variable_conflict use_column
DECLARE
    c_caller constant text := 'pushd_live_activity_targets';
BEGIN
    IF p_app_id IS NULL OR p_app_id = '' THEN
        RAISE EXCEPTION '%: app_id must be a non-empty string', c_caller USING ERRCODE = '22023';
    END IF;
    IF (p_recipient_ids IS NULL) = (p_device_ids IS NULL) THEN
        RAISE EXCEPTION '%: pass exactly one of recipient_ids and device_ids', c_caller USING ERRCODE = '22023';
    END IF;
    IF cardinality(coalesce(p_recipient_ids, '{}')) > 10000 OR cardinality(coalesce(p_device_ids, '{}')) > 10000 THEN
        RAISE EXCEPTION '%: at most 10000 recipients or devices', c_caller USING ERRCODE = '22023';
    END IF;
    IF p_kind = 'push_to_start' THEN
        IF p_activity_id IS NOT NULL THEN
            PERFORM pushd_live_activity_check_activity_id(c_caller, p_activity_id);
        END IF;
        RETURN QUERY
        SELECT d.id, d.recipient_id, d.environment, s.token, s.token_registered_at, d.public_key, d.key_id
          FROM devices d
          LEFT JOIN live_activity_start_tokens s ON s.device_id = d.id
         WHERE d.app_id = p_app_id AND d.platform = 'ios'
           AND (p_recipient_ids IS NULL OR d.recipient_id = ANY (p_recipient_ids))
           AND (p_device_ids IS NULL OR d.id = ANY (p_device_ids))
         ORDER BY d.id;
    ELSIF p_kind = 'activity_update' THEN
        PERFORM pushd_live_activity_check_activity_id(c_caller, p_activity_id);
        RETURN QUERY
        SELECT d.id, d.recipient_id, d.environment, u.token, u.token_registered_at, d.public_key, d.key_id
          FROM devices d
          LEFT JOIN live_activity_update_tokens u ON u.device_id = d.id AND u.activity_id = p_activity_id
         WHERE d.app_id = p_app_id AND d.platform = 'ios'
           AND (p_recipient_ids IS NULL OR d.recipient_id = ANY (p_recipient_ids))
           AND (p_device_ids IS NULL OR d.id = ANY (p_device_ids))
         ORDER BY d.id;
    ELSE
        RAISE EXCEPTION '%: kind must be ''push_to_start'' or ''activity_update'', got %',
            c_caller, coalesce(quote_literal(p_kind), 'NULL') USING ERRCODE = '22023';
    END IF;
END
$fn$;

COMMENT ON FUNCTION pushd_live_activity_targets(text, text, text, text[], bigint[]) IS
$$The worker's lookup for a Live Activity job: every iOS device of app_id addressed by the job (exactly one of
recipient_ids / device_ids, at most 10000), with its Live Activity token of the given kind and its E2E key.
kind 'push_to_start' (event start; activity_id may be NULL) returns the push-to-start token; kind
'activity_update' (events update and end; activity_id required) returns the update token of that activity.
token IS NULL means the device has no such token: nothing can be sent to it (count it, skip it). public_key NULL
means no E2E key: the device gets the non-private layout only. Ordered by device_id.$$;

COMMENT ON FUNCTION pushd_live_activity_check_token(text, text, text) IS 'Internal: validates an APNs token argument, returns it lower-cased.';
COMMENT ON FUNCTION pushd_live_activity_check_scope(text, text, text) IS 'Internal: validates app_id and environment arguments.';
COMMENT ON FUNCTION pushd_live_activity_check_activity_id(text, text) IS 'Internal: validates an activity_id argument.';
COMMENT ON FUNCTION pushd_live_activity_device(text, text, text, text) IS 'Internal: the locked iOS device row of a device token, or P0002.';
