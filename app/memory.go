package app

import (
	"context"

	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/tool/memory"
)

// memoryStore adapts the store's memory to the memory tools.
type memoryStore struct{ s store.MemoryStore }

func (m memoryStore) WriteMemory(ctx context.Context, mem memory.Memory) (memory.Memory, error) {
	out, err := m.s.WriteMemory(ctx, store.Memory(mem))
	return memory.Memory(out), err
}

func (m memoryStore) SearchMemory(ctx context.Context, query string, limit int) ([]memory.Memory, error) {
	return convert(m.s.SearchMemory(ctx, query, limit))
}

func (m memoryStore) RecentMemory(ctx context.Context, limit int) ([]memory.Memory, error) {
	return convert(m.s.RecentMemory(ctx, limit))
}

func convert(in []store.Memory, err error) ([]memory.Memory, error) {
	out := make([]memory.Memory, len(in))
	for i, m := range in {
		out[i] = memory.Memory(m)
	}
	return out, err
}
