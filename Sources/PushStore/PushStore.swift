// The device registry in PostgreSQL (libpq). See README.md.
