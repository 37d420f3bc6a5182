-- onceflow's least-privilege roles: one login role per service, holding exactly
-- the privileges its ownership needs (docs/architecture.md, "Ownership in the database"):
--
--   onceflow_ingest      DML on schema ingest
--   onceflow_relay       DML on schema relay; SELECT, UPDATE, DELETE on
--                        ingest.outbox and invoicer.outbox (publish, park, prune)
--   onceflow_invoicer    DML on schema invoicer
--   onceflow_reconciler  DML on schema reconciler; SELECT on the columns of
--                        ingest, invoicer and relay its queries read (below)
--
-- No service role owns anything or may run DDL: the migrator, the role that
-- runs the migrations (and so owns the schemas), runs this script too, after
-- every schema is migrated. Default privileges are set for objects the migrator
-- creates later, so a table added by a later migration carries the same grants.
-- The script converges: it first revokes whatever the four roles hold on the
-- four schemas, then grants the list above, so running it twice, or after a
-- change to this file, leaves exactly these privileges.
--
-- Passwords come from session settings, so the same file runs from Go
-- (db.ApplyRoles) and from psql:
--
--   psql "$MIGRATOR_URL" -v ON_ERROR_STOP=1 -1 \
--     -c "SET onceflow.ingest_password = '...'" -f db/roles/roles.sql
--
-- onceflow.<schema>_password may also hold a SCRAM verifier (SCRAM-SHA-256$...),
-- which PostgreSQL stores as given. A role without a setting keeps its password;
-- a new one gets none (NULL), for local trust authentication or IAM auth.
-- Run it in one transaction (psql -1), as db.ApplyRoles does.

-- Roles: created once, NOLOGIN roles made LOGIN, passwords set when given.
DO $$
DECLARE
    svc  text;
    role text;
    pw   text;
BEGIN
    FOREACH svc IN ARRAY ARRAY['ingest', 'relay', 'invoicer', 'reconciler'] LOOP
        role := 'onceflow_' || svc;
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = role) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I LOGIN', role);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- roles are cluster-wide: another database's run created it first
            END;
        ELSIF NOT (SELECT rolcanlogin FROM pg_roles WHERE rolname = role) THEN
            EXECUTE format('ALTER ROLE %I LOGIN', role);
        END IF;
        pw := nullif(current_setting('onceflow.' || svc || '_password', true), '');
        IF pw IS NOT NULL THEN
            EXECUTE format('ALTER ROLE %I PASSWORD %L', role, pw);
        END IF;
    END LOOP;
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO onceflow_ingest, onceflow_relay, onceflow_invoicer, onceflow_reconciler',
        current_database());
END
$$;

-- Start from nothing on the four schemas, now and for objects created later.
REVOKE ALL ON ALL TABLES IN SCHEMA ingest, relay, invoicer, reconciler
    FROM onceflow_ingest, onceflow_relay, onceflow_invoicer, onceflow_reconciler;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA ingest, relay, invoicer, reconciler
    FROM onceflow_ingest, onceflow_relay, onceflow_invoicer, onceflow_reconciler;
REVOKE ALL ON SCHEMA ingest, relay, invoicer, reconciler
    FROM onceflow_ingest, onceflow_relay, onceflow_invoicer, onceflow_reconciler;
ALTER DEFAULT PRIVILEGES IN SCHEMA ingest, relay, invoicer, reconciler
    REVOKE ALL ON TABLES FROM onceflow_ingest, onceflow_relay, onceflow_invoicer, onceflow_reconciler;
ALTER DEFAULT PRIVILEGES IN SCHEMA ingest, relay, invoicer, reconciler
    REVOKE ALL ON SEQUENCES FROM onceflow_ingest, onceflow_relay, onceflow_invoicer, onceflow_reconciler;

-- Each service reads and writes the tables of its own schema (its outbox and
-- leases included) and uses its sequences.
GRANT USAGE ON SCHEMA ingest TO onceflow_ingest;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ingest TO onceflow_ingest;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA ingest TO onceflow_ingest;
ALTER DEFAULT PRIVILEGES IN SCHEMA ingest GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO onceflow_ingest;
ALTER DEFAULT PRIVILEGES IN SCHEMA ingest GRANT USAGE, SELECT ON SEQUENCES TO onceflow_ingest;

GRANT USAGE ON SCHEMA relay TO onceflow_relay;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA relay TO onceflow_relay;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA relay TO onceflow_relay;
ALTER DEFAULT PRIVILEGES IN SCHEMA relay GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO onceflow_relay;
ALTER DEFAULT PRIVILEGES IN SCHEMA relay GRANT USAGE, SELECT ON SEQUENCES TO onceflow_relay;

GRANT USAGE ON SCHEMA invoicer TO onceflow_invoicer;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA invoicer TO onceflow_invoicer;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA invoicer TO onceflow_invoicer;
ALTER DEFAULT PRIVILEGES IN SCHEMA invoicer GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO onceflow_invoicer;
ALTER DEFAULT PRIVILEGES IN SCHEMA invoicer GRANT USAGE, SELECT ON SEQUENCES TO onceflow_invoicer;

GRANT USAGE ON SCHEMA reconciler TO onceflow_reconciler;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA reconciler TO onceflow_reconciler;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA reconciler TO onceflow_reconciler;
ALTER DEFAULT PRIVILEGES IN SCHEMA reconciler GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO onceflow_reconciler;
ALTER DEFAULT PRIVILEGES IN SCHEMA reconciler GRANT USAGE, SELECT ON SEQUENCES TO onceflow_reconciler;

-- The migration history belongs to the migrator: services may read it only.
DO $$
DECLARE
    svc text;
BEGIN
    FOREACH svc IN ARRAY ARRAY['ingest', 'relay', 'invoicer', 'reconciler'] LOOP
        IF to_regclass(format('%I.goose_db_version', svc)) IS NOT NULL THEN
            EXECUTE format('REVOKE INSERT, UPDATE, DELETE ON %I.goose_db_version FROM %I', svc, 'onceflow_' || svc);
        END IF;
    END LOOP;
END
$$;

-- The relay publishes, parks and prunes the producers' outbox rows; it never
-- inserts them and sees nothing else of those schemas. An outbox added to
-- RELAY_ROUTES needs its line here.
GRANT USAGE ON SCHEMA ingest, invoicer TO onceflow_relay;
GRANT SELECT, UPDATE, DELETE ON ingest.outbox, invoicer.outbox TO onceflow_relay;

-- The reconciler reads exactly the columns its queries use
-- (db/reconciler/queries), and nothing of a table added later: no customers,
-- no webhook bodies, no order lines, no document buyers, no event payloads
-- of either outbox. The missing-document sweep never reads an event: it asks
-- ingest, on ingest's admin API, to announce it again (docs/security.md). A
-- new reconciler query on another schema needs its columns here;
-- db/roles_test.go runs every one as the role.
GRANT USAGE ON SCHEMA ingest, invoicer, relay TO onceflow_reconciler;
GRANT SELECT (id, event_key, event_type, parked_at, parked_reason, published_at)
    ON ingest.outbox TO onceflow_reconciler;
GRANT SELECT (id, source, event_id, status, attempts, lease_expires_at, received_at)
    ON ingest.webhook_receipts TO onceflow_reconciler;
GRANT SELECT (id, order_id, status, amount_minor, currency, paid_at) ON ingest.payments TO onceflow_reconciler;
GRANT SELECT (id, payment_id, status, amount_minor, currency, succeeded_at) ON ingest.refunds TO onceflow_reconciler;
GRANT SELECT (id, merchant_order_id) ON ingest.orders TO onceflow_reconciler;
GRANT SELECT ON ingest.cases TO onceflow_reconciler;
GRANT SELECT (id, event_key, event_type, parked_at, parked_reason, published_at) ON invoicer.outbox TO onceflow_reconciler;
GRANT SELECT (id, reference, source_kind, source_ref, kind, status, attention_reason, amount_minor,
              currency, issue_date, lease_expires_at, created_at, updated_at, audit_changed_at,
              cfe_type, provider_number)
    ON invoicer.fiscal_documents TO onceflow_reconciler;
GRANT SELECT ON invoicer.cases TO onceflow_reconciler;
GRANT SELECT (name, holder, expires_at) ON relay.leases TO onceflow_reconciler;
