package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/config"
)

// offlineRule is the one rule for the offline scripted model, stated in
// the --help of every command that runs a model in its own process
// (serve, mcp, run, chat, spawn --wait) and in docs/models.md.
const offlineRule = `Offline: a command that runs the model in its own process (serve, mcp, run,
chat, spawn --wait) uses --model, else AVA_MODEL or config.yaml's model;
with no model provider configured and no model named, it uses the offline
scripted model (scripted/demo) and says so on stderr. --offline chooses the
offline model even when a provider is configured. A command that hands work
to a daemon (spawn without --wait, send, chat with AVA_ADDR) runs on the
daemon's model: start the daemon with --offline instead.`

// addOfflineFlag adds --offline to cmd, which cannot be given together
// with --model (two models named), and appends the offline rule to its
// help.
func addOfflineFlag(cmd *cobra.Command, offline *bool) {
	cmd.Flags().BoolVar(offline, "offline", false, "use the offline scripted model (scripted/demo: no network, no key), even when a provider is configured")
	if cmd.Flags().Lookup("model") != nil {
		cmd.MarkFlagsMutuallyExclusive("offline", "model")
	}
	cmd.Long += "\n\n" + offlineRule
}

// chooseModel applies the offline rule to cfg: --offline (offline) or no
// provider and no model named (neither named nor cfg.Model) choose the
// offline model, said once on stderr. It returns the configuration to
// open the runtime with and whether the offline model was chosen.
func (a *App) chooseModel(cfg config.Config, offline bool, named string) (config.Config, bool) {
	if offline {
		cfg.Model = ava.OfflineModel
		fmt.Fprintf(a.Stderr, "[offline] --offline: using the offline scripted model %s (no network, not a real model)\n", ava.OfflineModel)
		return cfg, true
	}
	if named != "" {
		return cfg, false
	}
	cfg, fell := ava.Offline(cfg)
	if fell {
		fmt.Fprintf(a.Stderr, "[offline] no model provider is configured: using the offline scripted model %s (no network, not a real model).\n"+
			"For a real model set ANTHROPIC_API_KEY, OPENROUTER_API_KEY, OPENAI_API_KEY or OPENAI_BASE_URL (see docs/models.md).\n", ava.OfflineModel)
	}
	return cfg, fell
}

// refuseOffline is the usage error of --offline on a command that hands
// its work to the daemon, whose model applies.
func refuseOffline(cmd *cobra.Command, what string) error {
	if !cmd.Flags().Changed("offline") {
		return nil
	}
	return usageError(fmt.Errorf("--offline applies to a command that runs the model here; %s the daemon's model applies (start it with ava serve --offline)", what))
}
