package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/orchestrator"
)

// Instance is an opened Ava: configuration, models, the event hub and
// what backs it. Close it to flush and release everything.
type Instance struct {
	Config  config.Config
	Catalog *llm.Catalog
	Hub     *event.Hub
	Log     *slog.Logger

	closers []func() error
}

// Open builds an Instance from a validated cfg, creating the data root.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger) (*Instance, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := cfg.EnsureDataRoot(); err != nil {
		return nil, err
	}
	cat, err := Catalog(cfg, log)
	if err != nil {
		return nil, err
	}
	in := &Instance{Config: cfg, Catalog: cat, Log: log}
	in.Hub = event.NewHub()
	return in, nil
}

// Close flushes and closes everything the instance opened, in reverse
// order.
func (in *Instance) Close() error {
	var errs []error
	for i := len(in.closers) - 1; i >= 0; i-- {
		if err := in.closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	in.closers = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close ava: %w", err)
	}
	return nil
}

// History returns the store-backed session history (nil until the store
// is wired).
func (in *Instance) History() orchestrator.History { return nil }
