-- The service's own PostgreSQL role, onceflow, and its schema, onceflow.
--
-- Run it once per database, as an administrator, in the database the
-- service's DATABASE_URL names (it is safe to run again):
--
--   psql "postgres://<admin>@<host>:5432/onceflow?sslmode=verify-full" \
--     -v ON_ERROR_STOP=1 -f deploy/postgres/role.sql
--
-- then give the role its password, which psql sends hashed and no log or
-- shell history keeps (put the same in the Secret's DATABASE_URL):
--
--   psql "postgres://<admin>@<host>:5432/onceflow?sslmode=verify-full" -c '\password onceflow'
--
-- The role logs in and owns one schema: the records' and the domain's
-- migrations create their tables there, and so does the service while it
-- runs (the sql transport's topic and offset tables, the outbox of
-- DEDUP_MODE=transaction, the partitions of PG_RECORDS_LAYOUT=partitioned),
-- so the role that migrates and the role that runs are one. It is no
-- superuser, creates no database or role, cannot replicate or bypass row
-- security, and its search_path is its schema alone, so nothing it reads
-- resolves to a table another role made in public.
--
-- On PostgreSQL 14 and older, every role may create tables in public: in
-- a database of the service's own, revoke that too:
--
--   REVOKE CREATE ON SCHEMA public FROM PUBLIC;

DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'onceflow') THEN
    CREATE ROLE onceflow LOGIN;
  END IF;
END
$$;

-- Whatever the role was before, it is this now.
ALTER ROLE onceflow LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT;
ALTER ROLE onceflow SET search_path = onceflow;

CREATE SCHEMA IF NOT EXISTS onceflow AUTHORIZATION onceflow;
ALTER SCHEMA onceflow OWNER TO onceflow;

DO $$
BEGIN
  EXECUTE format('GRANT CONNECT ON DATABASE %I TO onceflow', current_database());
END
$$;
