-- 0008_public_key_checks_in_order.sql — pushd_record_public_key_checks inserts in digest order.
--
-- Runs inside one transaction (the migrator wraps it); no BEGIN/COMMIT here.
-- 0007's version inserted the distinct digests in whatever order the plan produced. Two
-- workers recording overlapping sets at once could then each wait for a row the other had
-- inserted and not yet committed, in opposite orders, and PostgreSQL would cancel one of them
-- as a deadlock (SQLSTATE 40P01): its records were lost and those keys checked again. Rows
-- taken in one global order (the digests' byte order) cannot wait on each other in a cycle.
CREATE OR REPLACE FUNCTION pushd_record_public_key_checks(p_digests bytea[]) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO pushd_public_key_checks (digest)
    SELECT d FROM (SELECT DISTINCT d FROM unnest(p_digests) AS d) AS distinct_digests
    ORDER BY d
    ON CONFLICT (digest) DO NOTHING;
$$;
