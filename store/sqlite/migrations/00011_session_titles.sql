-- Session titles (issue 31): what the sessions menu shows instead of a
-- raw key. A new session takes its first user message's first line, cut
-- (store.TitleFrom, when that message is stored); the person may rename
-- it (SetSessionTitle). Main sessions stored before take their first
-- user message's first 60 characters here.

-- +goose Up
ALTER TABLE sessions ADD COLUMN title TEXT NOT NULL DEFAULT '';
UPDATE sessions SET title = coalesce((
    SELECT trim(substr(replace(replace(m.text, char(13), ' '), char(10), ' '), 1, 60))
    FROM messages m
    WHERE m.session_key = sessions.key AND m.role = 'user' AND m.sender = 'user' AND trim(m.text) <> ''
    ORDER BY m.id LIMIT 1), '')
WHERE substr(key, 1, 13) <> 'ava:subagent:';

-- +goose Down
ALTER TABLE sessions DROP COLUMN title;
