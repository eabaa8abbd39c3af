-- Schemas/sql/tests/job_outcomes_test.sql — the job.completed tally (0006): idempotent
-- upserts, final outcomes never changed, one completing part, publication marked once.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

DO $$
BEGIN
    -- A job split into 2 parts: part 1 has a pending retry, part 2 is not registered yet.
    ASSERT NOT pushd_record_job_outcomes('j', 2, 1, '{1,2}', '{ios,android}', '{delivered,NULL}', '{}'), 'part 2 missing';
    -- Recording the same message again changes nothing.
    ASSERT NOT pushd_record_job_outcomes('j', 2, 1, '{1,2}', '{ios,android}', '{delivered,NULL}', '{}'), 'idempotent';
    ASSERT (SELECT count(*) FROM pushd_job_outcomes WHERE job_id = 'j') = 2, 'two rows';
    ASSERT NOT pushd_record_job_outcomes('j', 2, 2, '{3}', '{ios}', '{invalid}', '{}'), 'device 2 still pending';
    -- The retry settles device 2: part 1 completes the job and publishes.
    ASSERT pushd_record_job_outcomes('j', 2, 1, '{2}', '{android}', '{retries_exhausted}', '{}'), 'part 1 completes';
    -- Its redelivery (not yet published) publishes again; another part never does.
    ASSERT pushd_record_job_outcomes('j', 2, 1, '{2}', '{android}', '{delivered}', '{}'), 'redelivery of the completing part';
    ASSERT NOT pushd_record_job_outcomes('j', 2, 2, '{3}', '{ios}', '{delivered}', '{}'), 'other part';
    ASSERT (SELECT outcome FROM pushd_job_outcomes WHERE job_id = 'j' AND device_id = 2) = 'retries_exhausted', 'final stays final';
    ASSERT (SELECT outcome FROM pushd_job_outcomes WHERE job_id = 'j' AND device_id = 3) = 'invalid', 'final stays final';
    PERFORM pushd_mark_job_completed_published('j');
    ASSERT NOT pushd_record_job_outcomes('j', 2, 1, '{2}', '{android}', '{delivered}', '{}'), 'published: never again';

    -- A retry whose device was deleted meanwhile: recorded as rejected, which completes the job.
    ASSERT NOT pushd_record_job_outcomes('k', 1, 0, '{5,6}', '{ios,ios}', '{delivered,NULL}', '{}'), 'k pending';
    ASSERT pushd_record_job_outcomes('k', 1, 0, '{}', '{}', '{}', '{6}'), 'gone device completes k';
    ASSERT (SELECT outcome FROM pushd_job_outcomes WHERE job_id = 'k' AND device_id = 6) = 'rejected', 'gone = rejected';

    -- A job whose recipients have no device completes at once.
    ASSERT pushd_record_job_outcomes('empty', 1, 0, '{}', '{}', '{}', '{}'), 'no devices';

    -- Pruning removes published reports with their outcomes, keeps the others.
    ASSERT pushd_prune_job_reports(now() + interval '1 second') = 1, 'one published report';
    ASSERT NOT EXISTS (SELECT 1 FROM pushd_job_outcomes WHERE job_id = 'j'), 'outcomes cascade';
    ASSERT EXISTS (SELECT 1 FROM pushd_job_reports WHERE job_id = 'k'), 'unpublished kept';
END
$$;

-- Arrays of different lengths are refused.
DO $$
BEGIN
    PERFORM pushd_record_job_outcomes('bad', 1, 0, '{1}', '{}', '{}', '{}');
    RAISE EXCEPTION 'expected 22023';
EXCEPTION WHEN invalid_parameter_value THEN
    NULL;
END
$$;
\echo job_outcomes_test.sql: all assertions passed
