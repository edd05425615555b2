package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/avaagent/ava/store"
)

// DefaultMemoryLimit is how many memories SearchMemory and RecentMemory
// return when limit is 0.
const DefaultMemoryLimit = 10

// maxSearchTerms bounds how many words of a query are searched for.
const maxSearchTerms = 32

// minPrefixTermLen is the shortest term also matched as a word prefix
// ("deploy" finds "deployment"); shorter ones would match too much.
const minPrefixTermLen = 3

const memoryColumns = `memories.id, memories.content, memories.tags, memories.source, memories.created_at`

func scanMemories(rows *sql.Rows) ([]store.Memory, error) {
	defer rows.Close()
	var out []store.Memory
	for rows.Next() {
		var (
			m    store.Memory
			tags string
			at   int64
		)
		if err := rows.Scan(&m.ID, &m.Content, &tags, &m.Source, &at); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(tags), &m.Tags); err != nil {
			return nil, fmt.Errorf("memory %d: stored tags: %w", m.ID, err)
		}
		m.CreatedAt = fromNS(at)
		out = append(out, m)
	}
	return out, rows.Err()
}

// normalizeTags trims tags and drops empty and repeated ones, keeping
// their order.
func normalizeTags(tags []string) []string {
	out := []string{}
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// WriteMemory stores m and returns it with ID, CreatedAt and normalised
// Tags set.
func (s *Store) WriteMemory(ctx context.Context, m store.Memory) (store.Memory, error) {
	if strings.TrimSpace(m.Content) == "" {
		return store.Memory{}, errors.New("write memory: content is empty")
	}
	s.maskMemory(&m)
	m.Tags = normalizeTags(m.Tags)
	m.CreatedAt = s.orNow(m.CreatedAt).UTC()
	tags, err := json.Marshal(m.Tags)
	if err != nil {
		return store.Memory{}, fmt.Errorf("write memory: tags: %w", err)
	}
	err = s.writer.QueryRowContext(ctx, `INSERT INTO memories (content, tags, source, created_at)
		VALUES (?, ?, ?, ?) RETURNING id`, m.Content, string(tags), m.Source, toNS(m.CreatedAt)).Scan(&m.ID)
	if err != nil {
		return store.Memory{}, fmt.Errorf("write memory: %w", err)
	}
	return m, nil
}

// memoryLimit applies the default to limit and refuses a negative one.
func memoryLimit(limit int) (int, error) {
	switch {
	case limit < 0:
		return 0, fmt.Errorf("limit must be >= 0, got %d", limit)
	case limit == 0:
		return DefaultMemoryLimit, nil
	}
	return limit, nil
}

// SearchMemory returns up to limit memories (DefaultMemoryLimit when 0)
// whose content or tags contain any word of query, best match first (BM25,
// so memories matching more and rarer words rank higher). The query is
// plain text, never FTS syntax: quotes, AND, OR, NOT, NEAR, *, ^, : and
// parentheses in it cannot change the search. A query with no letters or
// digits matches nothing; a blank one is an error.
func (s *Store) SearchMemory(ctx context.Context, query string, limit int) ([]store.Memory, error) {
	limit, err := memoryLimit(limit)
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
// It splits the text into words the way the unicode61 tokenizer does
// (runs of letters, digits and marks; everything else separates), and
// quotes each word, so nothing in the text is read as FTS syntax: "NOT",
// "NEAR" and "content:x" are words like any other. Longer words also
// match as prefixes. Text with no words gives "".
func ftsQuery(text string) string {
	words := strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
	})
	var terms []string
	for _, w := range words {
		q := `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
		if utf8.RuneCountInString(w) >= minPrefixTermLen {
			q += "*"
		}
		if !slices.Contains(terms, q) {
			terms = append(terms, q)
		}
		if len(terms) == maxSearchTerms {
			break
		}
	}
	return strings.Join(terms, " OR ")
}

// RecentMemory returns up to limit memories (DefaultMemoryLimit when 0),
// newest first.
func (s *Store) RecentMemory(ctx context.Context, limit int) ([]store.Memory, error) {
	limit, err := memoryLimit(limit)
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
