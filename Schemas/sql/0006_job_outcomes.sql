-- 0006_job_outcomes.sql — the outcome tally behind job.completed events (issue 14).
--
-- Runs inside one transaction (the migrator wraps it); no BEGIN/COMMIT here.
-- Written only by workers, for jobs whose producer set report.completed_event; the design is
-- explained in Schemas/README.md, "Outcome events".
--
-- A job's report has `chunks` parts (1 for a job that was not split; chunk 0 then). Each part
-- registers itself and every device it resolved on its first attempt; a device's outcome is
-- NULL while a retry is pending, then final: delivered, invalid, rejected or
-- retries_exhausted. A final outcome is never changed, so a redelivered or repeated message
-- (at-least-once delivery) cannot undo it. The job is complete when every part registered and
-- no outcome is NULL; the part whose recording completed it is remembered (completed_chunk),
-- and only that part's message publishes the event: two parts finishing at once cannot both
-- publish, and a crash before the broker confirmed the event leaves the part's message
-- unacked, so its redelivery publishes it again. published_at is set once confirmed.

CREATE TABLE pushd_job_reports (
    job_id          text        PRIMARY KEY CHECK (char_length(job_id) BETWEEN 1 AND 128),
    chunks          integer     NOT NULL CHECK (chunks BETWEEN 1 AND 10000),
    completed_chunk integer,
    published_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE pushd_job_reports IS
    'One row per job that asked for a job.completed event. completed_chunk: the part whose worker publishes the event; published_at: when the broker confirmed it. Write through pushd_record_job_outcomes / pushd_mark_job_completed_published.';

CREATE TABLE pushd_job_report_chunks (
    job_id text    NOT NULL REFERENCES pushd_job_reports (job_id) ON DELETE CASCADE,
    chunk  integer NOT NULL CHECK (chunk BETWEEN 0 AND 10000),
    PRIMARY KEY (job_id, chunk)
);

COMMENT ON TABLE pushd_job_report_chunks IS 'The parts of a job that have resolved their devices.';

CREATE TABLE pushd_job_outcomes (
    job_id    text    NOT NULL,
    chunk     integer NOT NULL,
    device_id bigint  NOT NULL,
    platform  text    NOT NULL CHECK (platform IN ('ios', 'android')),
    outcome   text    CHECK (outcome IN ('delivered', 'invalid', 'rejected', 'retries_exhausted')),
    PRIMARY KEY (job_id, chunk, device_id),
    FOREIGN KEY (job_id, chunk) REFERENCES pushd_job_report_chunks (job_id, chunk) ON DELETE CASCADE
);

CREATE INDEX pushd_job_outcomes_pending_idx ON pushd_job_outcomes (job_id) WHERE outcome IS NULL;

COMMENT ON TABLE pushd_job_outcomes IS
    'Outcome per (job, part, device); NULL while a retry is pending. Device ids only: no token, no content.';

-- Records one message's outcomes and says whether this message now publishes job.completed.
-- p_device_ids / p_platforms / p_outcomes are parallel arrays (an outcome may be NULL: retry
-- pending), each device at most once; p_gone are devices of a retry that no longer exist
-- (recorded as rejected). Idempotent: calling it again with the same arguments changes nothing.
CREATE FUNCTION pushd_record_job_outcomes(
    p_job_id text, p_chunks integer, p_chunk integer,
    p_device_ids bigint[], p_platforms text[], p_outcomes text[], p_gone bigint[]
) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    report pushd_job_reports%ROWTYPE;
BEGIN
    IF cardinality(p_device_ids) <> cardinality(p_platforms) OR cardinality(p_device_ids) <> cardinality(p_outcomes) THEN
        RAISE EXCEPTION 'pushd_record_job_outcomes: device ids, platforms and outcomes differ in length'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO pushd_job_reports (job_id, chunks) VALUES (p_job_id, p_chunks) ON CONFLICT (job_id) DO NOTHING;
    -- One recorder per job at a time: the last part to finish sees every other part's rows.
    SELECT * INTO report FROM pushd_job_reports WHERE job_id = p_job_id FOR UPDATE;
    INSERT INTO pushd_job_report_chunks (job_id, chunk) VALUES (p_job_id, p_chunk) ON CONFLICT DO NOTHING;
    INSERT INTO pushd_job_outcomes (job_id, chunk, device_id, platform, outcome)
    SELECT p_job_id, p_chunk, u.device_id, u.platform, u.outcome
    FROM unnest(p_device_ids, p_platforms, p_outcomes) AS u(device_id, platform, outcome)
    ON CONFLICT (job_id, chunk, device_id) DO UPDATE SET outcome = EXCLUDED.outcome
        WHERE pushd_job_outcomes.outcome IS NULL AND EXCLUDED.outcome IS NOT NULL;
    UPDATE pushd_job_outcomes SET outcome = 'rejected'
    WHERE job_id = p_job_id AND chunk = p_chunk AND device_id = ANY (p_gone) AND outcome IS NULL;

    IF report.completed_chunk IS NULL THEN
        IF (SELECT count(*) FROM pushd_job_report_chunks WHERE job_id = p_job_id) < report.chunks
           OR EXISTS (SELECT 1 FROM pushd_job_outcomes WHERE job_id = p_job_id AND outcome IS NULL) THEN
            RETURN false;
        END IF;
        UPDATE pushd_job_reports SET completed_chunk = p_chunk WHERE job_id = p_job_id;
        RETURN true;
    END IF;
    RETURN report.completed_chunk = p_chunk AND report.published_at IS NULL;
END
$$;

-- The broker confirmed the job's job.completed event: later messages of that part do not
-- publish it again.
CREATE FUNCTION pushd_mark_job_completed_published(p_job_id text) RETURNS void
LANGUAGE sql AS $$
    UPDATE pushd_job_reports SET published_at = now() WHERE job_id = p_job_id AND published_at IS NULL;
$$;

-- Deletes reports whose event was published before `p_before` (and their outcomes); returns
-- how many. Run it from a periodic job; unfinished reports are kept.
CREATE FUNCTION pushd_prune_job_reports(p_before timestamptz) RETURNS bigint
LANGUAGE sql AS $$
    WITH deleted AS (DELETE FROM pushd_job_reports WHERE published_at < p_before RETURNING 1)
    SELECT count(*) FROM deleted;
$$;
