package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5"
	"golang.org/x/text/unicode/norm"

	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// Limits of a tsvector: a lexeme's length in bytes, a position, and the
// positions kept per lexeme.
const (
	maxLexemeBytes = 2046
	maxPosition    = 16383
	maxPositions   = 256
)

// DefaultMemoryLimit is how many memories SearchMemory and RecentMemory
// return when limit is 0.
const DefaultMemoryLimit = record.DefaultMemoryLimit

const memoryColumns = `id, content, tags, source, created_at`

func scanMemories(rows pgx.Rows) ([]store.Memory, error) {
	defer rows.Close()
	return record.Collect(rows, record.ScanMemory)
}

// searchWords splits text into words as SQLite's unicode61 tokenizer
// with remove_diacritics does: runs of letters, digits and marks,
// everything else separating, folded to lower case without diacritics.
func searchWords(text string) []string {
	var b strings.Builder
	for _, r := range norm.NFD.String(text) {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	words := record.Words(b.String())
	return slices.DeleteFunc(words, func(w string) bool { return len(w) > maxLexemeBytes })
}

// quoteLexeme quotes a word as a tsvector or tsquery lexeme.
func quoteLexeme(w string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(w) + "'"
}

// searchVector is the tsvector (in its text form) of a memory's content
// and tags: each word with the positions it has.
func searchVector(content string, tags []string) string {
	words := searchWords(content + " " + strings.Join(tags, " "))
	positions := map[string][]string{}
	var order []string
	for i, w := range words {
		if _, seen := positions[w]; !seen {
			order = append(order, w)
		}
		if len(positions[w]) < maxPositions {
			positions[w] = append(positions[w], strconv.Itoa(min(i+1, maxPosition)))
		}
	}
	parts := make([]string, len(order))
	for i, w := range order {
		parts[i] = quoteLexeme(w) + ":" + strings.Join(positions[w], ",")
	}
	return strings.Join(parts, " ")
}

// searchQuery turns plain text into a tsquery (text form) matching any of
// its words, longer words also as prefixes. Each word is quoted, so
// nothing in the text is read as query syntax: "!", "&", "|", "<->" and
// "NOT" are separators or words. Text with no words gives "".
func searchQuery(text string) string {
	return record.AnyOf(searchWords(text), quoteLexeme, ":*", " | ")
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
	err = s.pool.QueryRow(ctx, `INSERT INTO memories (content, tags, source, created_at, search)
		VALUES ($1, $2, $3, $4, $5::tsvector) RETURNING id`,
		m.Content, string(tags), m.Source, record.ToNS(m.CreatedAt), searchVector(m.Content, m.Tags)).Scan(&m.ID)
	if err != nil {
		return store.Memory{}, fmt.Errorf("write memory: %w", err)
	}
	return m, nil
}

// SearchMemory returns up to limit memories (DefaultMemoryLimit when 0)
// whose content or tags contain any word of query, best match first
// (ts_rank, so memories matching more of the words rank higher; SQLite
// ranks by BM25, which also weighs rare words higher). The query is plain
// text, never tsquery syntax. A query with no letters or digits matches
// nothing; a blank one is an error.
func (s *Store) SearchMemory(ctx context.Context, query string, limit int) ([]store.Memory, error) {
	limit, err := record.MemoryLimit(limit)
	if err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	if strings.TrimSpace(query) == "" {
		return nil, errors.New("search memory: query is empty")
	}
	match := searchQuery(query)
	if match == "" {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+memoryColumns+` FROM memories, CAST($1 AS tsquery) AS q
		WHERE search @@ q ORDER BY ts_rank(search, q) DESC, id DESC LIMIT $2`, match, limit)
	if err != nil {
		return nil, fmt.Errorf("search memory for %q: %w", query, err)
	}
	out, err := scanMemories(rows)
	if err != nil {
		return nil, fmt.Errorf("search memory for %q: %w", query, err)
	}
	return out, nil
}

// RecentMemory returns up to limit memories (DefaultMemoryLimit when 0),
// newest first.
func (s *Store) RecentMemory(ctx context.Context, limit int) ([]store.Memory, error) {
	limit, err := record.MemoryLimit(limit)
	if err != nil {
		return nil, fmt.Errorf("recent memory: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+memoryColumns+` FROM memories
		ORDER BY created_at DESC, id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("recent memory: %w", err)
	}
	out, err := scanMemories(rows)
	if err != nil {
		return nil, fmt.Errorf("recent memory: %w", err)
	}
	return out, nil
}
