package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// DefaultMemoryLimit is how many memories SearchMemory and RecentMemory
// return when limit is 0.
const DefaultMemoryLimit = record.DefaultMemoryLimit

const memoryColumns = `memories.id, memories.content, memories.tags, memories.source, memories.created_at`

func scanMemories(rows *sql.Rows) ([]store.Memory, error) {
	defer rows.Close()
	return record.Collect(rows, record.ScanMemory)
}

// WriteMemory stores m and returns it with ID, CreatedAt and normalised
// Tags set.
func (s *Store) WriteMemory(ctx context.Context, m store.Memory) (store.Memory, error) {
	if err := s.rec.CheckMemory(&m); err != nil {
		return store.Memory{}, fmt.Errorf("write memory: %w", err)
	}
	tags, err := json.Marshal(m.Tags)
	if err != nil {
		return store.Memory{}, fmt.Errorf("write memory: tags: %w", err)
	}
	err = s.writer.QueryRowContext(ctx, `INSERT INTO memories (content, tags, source, created_at)
		VALUES (?, ?, ?, ?) RETURNING id`, m.Content, string(tags), m.Source, record.ToNS(m.CreatedAt)).Scan(&m.ID)
	if err != nil {
		return store.Memory{}, fmt.Errorf("write memory: %w", err)
	}
	return m, nil
}

// SearchMemory returns up to limit memories (DefaultMemoryLimit when 0)
// whose content or tags contain any word of query, best match first (BM25,
// so memories matching more and rarer words rank higher). The query is
// plain text, never FTS syntax: quotes, AND, OR, NOT, NEAR, *, ^, : and
// parentheses in it cannot change the search. A query with no letters or
// digits matches nothing; a blank one is an error.
func (s *Store) SearchMemory(ctx context.Context, query string, limit int) ([]store.Memory, error) {
	limit, err := record.MemoryLimit(limit)
	if err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	if strings.TrimSpace(query) == "" {
		return nil, errors.New("search memory: query is empty")
	}
	match := ftsQuery(query)
	if match == "" {
		return nil, nil
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT `+memoryColumns+`
		FROM memories_fts JOIN memories ON memories.id = memories_fts.rowid
		WHERE memories_fts MATCH ? ORDER BY memories_fts.rank, memories.id DESC LIMIT ?`, match, limit)
	if err != nil {
		return nil, fmt.Errorf("search memory for %q: %w", query, err)
	}
	out, err := scanMemories(rows)
	if err != nil {
		return nil, fmt.Errorf("search memory for %q: %w", query, err)
	}
	return out, nil
}

// ftsQuery turns plain text into an FTS5 query matching any of its words.
// It splits the text into words the way the unicode61 tokenizer does, and
// quotes each word, so nothing in the text is read as FTS syntax: "NOT",
// "NEAR" and "content:x" are words like any other. Longer words also
// match as prefixes. Text with no words gives "".
func ftsQuery(text string) string {
	quote := func(w string) string { return `"` + strings.ReplaceAll(w, `"`, `""`) + `"` }
	return record.AnyOf(record.Words(text), quote, "*", " OR ")
}

// RecentMemory returns up to limit memories (DefaultMemoryLimit when 0),
// newest first.
func (s *Store) RecentMemory(ctx context.Context, limit int) ([]store.Memory, error) {
	limit, err := record.MemoryLimit(limit)
	if err != nil {
		return nil, fmt.Errorf("recent memory: %w", err)
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT `+memoryColumns+` FROM memories
		ORDER BY created_at DESC, id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("recent memory: %w", err)
	}
	out, err := scanMemories(rows)
	if err != nil {
		return nil, fmt.Errorf("recent memory: %w", err)
	}
	return out, nil
}
