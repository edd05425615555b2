package app

import (
	"os"

	"github.com/avaagent/ava/sandbox"
	"github.com/avaagent/ava/tool/shell"
	"github.com/avaagent/ava/tool/web"
)

// SandboxSummary says which protections the process tools run with on
// this machine, in one line, for startup and `ava roles`. The first call
// sets a sandbox up once to find out.
func SandboxSummary() string { return sandbox.Probe().Summary() }

// SandboxReady reports whether the process tools can run: the sandbox is
// in place, or explicitly off.
func SandboxReady() bool { return sandbox.Probe().Err() == nil }

// shellConfig configures the process tools: sandboxed unless
// AVA_SANDBOX=off, the data root hidden from every command, and the
// egress proxy (used only where network is allowed) guarded like the web
// tools and limited to AVA_EGRESS_ALLOW's domains.
func (in *Instance) shellConfig() shell.Config {
	return shell.Config{
		Workspace:   in.Config.Workspace,
		SandboxOff:  sandbox.OffByEnv(os.Getenv),
		Hide:        []string{in.Config.DataRoot},
		EgressGuard: web.CheckPublic,
		EgressAllow: sandbox.ParseAllowList(os.Getenv(sandbox.EnvEgressAllow)),
	}
}

// hardenAndReport marks the process non-dumpable, so no command can read
// its memory or environment through /proc, and what it inherited
// close-on-exec, so no child gets it; and it logs which protections
// the process tools have: a warning when they are off or missing.
func (in *Instance) hardenAndReport() {
	if err := sandbox.HardenSelf(); err != nil {
		in.Log.Warn("could not harden the process (non-dumpable, inherited descriptors close-on-exec)", "err", err)
	}
	st := sandbox.Probe()
	if st.Off || !st.Ready {
		in.Log.Warn(st.Summary())
		return
	}
	in.Log.Info(st.Summary())
}
