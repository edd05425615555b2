-- A hook delivery names its hook by hook_id only: the target column
-- (the command line, or a webhook's whole URL) is dropped. A webhook's
-- path and query are often its credential (Slack's /services/T…/B…/…,
-- Discord's /api/webhooks/<id>/<token>, ?token=…), and the URL stays in
-- config.yaml where the person wrote it: the process that delivers finds
-- the hook in its running configuration by hook_id, as it always did, so
-- a pending or failed delivery is still delivered after this migration.
-- Surfaces show the hook's target from the configuration, masked.
--
-- Existing rows keep their hook_id (the stable key of what the hook
-- reaches); their URL goes with the column. A URL an attempt's error
-- quoted ("webhook https://…: answered 503") is replaced there by its
-- shown form, scheme and host and "/…" (redact.URL computes the same);
-- an error that still holds the URL's path after that (written some
-- other way) is replaced as a whole.

-- +goose Up
UPDATE hook_deliveries SET last_error = CASE
        WHEN m.p = 0 OR (length(m.tail) > 1 AND instr(replace(hook_deliveries.last_error, m.target, m.shown), m.tail) > 0)
            THEN 'an earlier attempt failed (its error named the webhook''s URL and is not kept)'
        ELSE replace(hook_deliveries.last_error, m.target, m.shown)
    END
FROM (
    SELECT id, target, p,
           substr(target, 1, p + 2 + e - 1) || CASE WHEN e <= length(rest) THEN '/…' ELSE '' END AS shown,
           substr(rest, e) AS tail
    FROM (
        SELECT id, target, p, rest,
               min(coalesce(nullif(instr(rest, '/'), 0), length(rest) + 1),
                   coalesce(nullif(instr(rest, '?'), 0), length(rest) + 1),
                   coalesce(nullif(instr(rest, '#'), 0), length(rest) + 1)) AS e
        FROM (
            SELECT id, target, instr(target, '://') AS p, substr(target, instr(target, '://') + 3) AS rest
            FROM hook_deliveries
            WHERE kind = 'url' AND last_error != ''
        )
    )
) AS m
WHERE hook_deliveries.id = m.id;

ALTER TABLE hook_deliveries DROP COLUMN target;

-- +goose Down
ALTER TABLE hook_deliveries ADD COLUMN target TEXT NOT NULL DEFAULT '';
