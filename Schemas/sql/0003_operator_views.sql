-- 0003_operator_views.sql — read-only views for operators and dashboards.
--
-- Runs inside one transaction (the migrator wraps it); no BEGIN/COMMIT here.

CREATE VIEW pushd_device_stats AS
SELECT d.app_id,
       d.platform,
       d.environment,
       count(*)                                  AS devices,
       count(d.public_key)                       AS devices_with_key,
       count(*) - count(d.public_key)            AS legacy_devices,
       count(DISTINCT d.recipient_id)            AS recipients,
       count(DISTINCT d.key_id)                  AS distinct_keys,
       min(d.token_registered_at)                AS oldest_registration,
       max(d.token_registered_at)                AS newest_registration
  FROM devices d
 GROUP BY d.app_id, d.platform, d.environment;

COMMENT ON VIEW pushd_device_stats IS
    'Devices per app, platform and environment: with/without E2E key (legacy), distinct recipients, registration age range.';

-- Tokens nobody has re-registered for a long time. FCM treats tokens unused for 270 days as
-- expired; APNs has no documented limit. Informational only: nothing deletes these rows
-- automatically — the providers' error responses (pushd_prune_token) are the source of truth.
CREATE VIEW pushd_stale_devices AS
SELECT d.id AS device_id,
       d.app_id,
       d.platform,
       d.environment,
       d.recipient_id,
       d.key_id,
       d.app_version,
       d.token_registered_at,
       now() - d.token_registered_at AS age
  FROM devices d
 WHERE d.token_registered_at < now() - interval '270 days';

COMMENT ON VIEW pushd_stale_devices IS
    'Devices whose token was last (re-)registered more than 270 days ago (FCM''s staleness horizon). Informational; does not show token text.';

-- Recipients with more than one device per app — normal (phone + tablet), but a high count
-- usually means the app does not re-register on token change and old tokens pile up.
CREATE VIEW pushd_recipient_device_counts AS
SELECT d.app_id,
       d.recipient_id,
       count(*)                        AS devices,
       count(*) FILTER (WHERE d.platform = 'ios')     AS ios_devices,
       count(*) FILTER (WHERE d.platform = 'android') AS android_devices,
       max(d.token_registered_at)      AS newest_registration
  FROM devices d
 GROUP BY d.app_id, d.recipient_id;

COMMENT ON VIEW pushd_recipient_device_counts IS
    'Devices per (app_id, recipient_id); sort by devices DESC to find recipients with piled-up tokens.';
