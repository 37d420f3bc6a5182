-- name: AuditDaysGet :many
-- AuditDaysGet returns what the audit of @provider knows of the days
-- @from_day to @to_day.
SELECT day, listed_at, listed, disagreements, onward_at
FROM reconciler.audit_days
WHERE provider = @provider AND day BETWEEN @from_day::date AND @to_day::date
ORDER BY day;

-- name: AuditDayListed :exec
-- AuditDayListed records that @day was listed in full at @listed_at, with
-- @listed documents returned and @disagreements seen.
INSERT INTO reconciler.audit_days (provider, day, listed_at, listed, disagreements)
VALUES (@provider, @day::date, @listed_at, @listed, @disagreements)
ON CONFLICT (provider, day) DO UPDATE
SET listed_at = excluded.listed_at, listed = excluded.listed, disagreements = excluded.disagreements, updated_at = now();

-- name: AuditDayDisagreements :exec
-- AuditDayDisagreements records the disagreements a run saw on @day
-- without listing it (by looking its changed documents up).
UPDATE reconciler.audit_days
SET disagreements = @disagreements, updated_at = now()
WHERE provider = @provider AND day = @day::date;

-- name: AuditDayListedOnward :exec
-- AuditDayListedOnward records that @day was listed onward at @onward_at:
-- only the numbers above those its earlier listings saw.
UPDATE reconciler.audit_days
SET onward_at = @onward_at, updated_at = now()
WHERE provider = @provider AND day = @day::date;

-- name: AuditDayNumbersGet :many
-- AuditDayNumbersGet returns, per CFE type, the highest number a listing
-- of @day saw.
SELECT cfe_type, listed_through
FROM reconciler.audit_day_numbers
WHERE provider = @provider AND day = @day::date
ORDER BY cfe_type;

-- name: AuditDayNumbersAdvance :exec
-- AuditDayNumbersAdvance raises the highest number seen on @day of each
-- type in @cfe_types to the matching one of @listed_through, never lowers it.
INSERT INTO reconciler.audit_day_numbers AS n (provider, day, cfe_type, listed_through)
SELECT @provider, @day::date, unnest(@cfe_types::integer[]), unnest(@listed_through::bigint[])
ON CONFLICT (provider, day, cfe_type) DO UPDATE
SET listed_through = excluded.listed_through, updated_at = now()
WHERE excluded.listed_through > n.listed_through;

-- name: AuditStateGet :one
-- AuditStateGet returns up to when the audit of @provider looked up our
-- changed documents.
SELECT changed_until FROM reconciler.audit_state WHERE provider = @provider;

-- name: AuditStateAdvance :exec
-- AuditStateAdvance moves @provider's changed_until to @changed_until,
-- never back.
INSERT INTO reconciler.audit_state AS s (provider, changed_until)
VALUES (@provider, @changed_until)
ON CONFLICT (provider) DO UPDATE
SET changed_until = excluded.changed_until, updated_at = now()
WHERE excluded.changed_until > s.changed_until;
