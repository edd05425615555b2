package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/avaagent/ava/llm"
)

// limitFlags are the limit flags of ava run and ava spawn: given
// explicitly, each must be more than zero.
var limitFlags = []string{"budget", "timeout", "max-cost", "max-tokens", "max-iterations"}

// checkFlags refuses the bad flag values of ava run and ava spawn as
// usage errors (exit 2): see checkLimitFlags and checkModelFlag.
func checkFlags(a *App, cmd *cobra.Command) error {
	if err := checkLimitFlags(cmd); err != nil {
		return err
	}
	return checkModelFlag(a, cmd)
}

// checkModelFlag refuses a --model that is neither provider/model nor an
// alias (built-in or configured), instead of sending it to the default
// provider as a model ID.
func checkModelFlag(a *App, cmd *cobra.Command) error {
	f := cmd.Flags().Lookup("model")
	if f == nil || !f.Changed {
		return nil
	}
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	if err := llm.CheckModelName(f.Value.String(), cfg.Aliases); err != nil {
		return usageError(fmt.Errorf("--model: %w", err))
	}
	return nil
}

// checkLimitFlags refuses, as a usage error (exit 2), any of limitFlags
// that cmd has, that was given explicitly, and whose value is zero or
// negative. A zero limit would end the run before it starts, and a
// negative one means nothing.
func checkLimitFlags(cmd *cobra.Command) error {
	flags := cmd.Flags()
	for _, name := range limitFlags {
		f := flags.Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		positive, err := flagIsPositive(cmd, name, f.Value.Type())
		if err != nil {
			return usageError(fmt.Errorf("--%s: %w", name, err))
		}
		if !positive {
			return usageError(fmt.Errorf("--%s %s: must be more than zero", name, f.Value.String()))
		}
	}
	return nil
}

// flagIsPositive reads the flag by its type and reports whether it is
// more than zero.
func flagIsPositive(cmd *cobra.Command, name, typ string) (bool, error) {
	flags := cmd.Flags()
	switch typ {
	case "float64":
		v, err := flags.GetFloat64(name)
		return v > 0, err
	case "int":
		v, err := flags.GetInt(name)
		return v > 0, err
	case "duration":
		v, err := flags.GetDuration(name)
		return v > time.Duration(0), err
	}
	return false, fmt.Errorf("limit flag of unexpected type %s", typ)
}
