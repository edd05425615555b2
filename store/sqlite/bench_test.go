package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/avaagent/ava/store"
)

func BenchmarkAppendMessage(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), FileName))
	m := store.Message{SessionKey: "ava:cli:bench", Role: store.RoleUser, Text: "hello",
		Blocks: []byte(`{"role":"user","content":[{"type":"text","text":"hello"}]}`)}
	for b.Loop() {
		if _, err := s.AppendMessage(b.Context(), m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendMessageParallel(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), FileName))
	b.SetParallelism(50) // many goroutines per core, as with many agents
	b.RunParallel(func(pb *testing.PB) {
		m := store.Message{SessionKey: "ava:cli:" + uuid.NewString(), Role: store.RoleUser, Text: "hello"}
		for pb.Next() {
			if _, err := s.AppendMessage(b.Context(), m); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkMessagesLast50(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), FileName))
	for i := range 2000 {
		m := store.Message{SessionKey: "ava:cli:bench", Role: store.RoleUser, Text: fmt.Sprint(i)}
		if _, err := s.AppendMessage(b.Context(), m); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := s.Messages(b.Context(), "ava:cli:bench", 50); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSearchMemory(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), FileName))
	for i := range 5000 {
		m := store.Memory{Content: fmt.Sprintf("note %d about deployment number %d and topic %d", i, i%97, i%13)}
		if _, err := s.WriteMemory(b.Context(), m); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := s.SearchMemory(b.Context(), "deployment topic 7", 10); err != nil {
			b.Fatal(err)
		}
	}
}
