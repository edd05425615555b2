package app

import (
	"github.com/avaagent/ava/sandbox"
	"github.com/avaagent/ava/tool/shell"
	"github.com/avaagent/ava/tool/web"
)

// SandboxSummary says which protections the process tools run with on
// this machine, in one line, for startup and `ava roles`. The first call
// sets a sandbox up once to find out.
func (in *Instance) SandboxSummary() string { return in.sandboxStatus().Summary() }

// sandboxStatus is the sandbox as the configuration has it: off, or
// what this machine gives (sandbox.Probe).
func (in *Instance) sandboxStatus() sandbox.Status {
	if in.Config.SandboxOff() {
		return sandbox.Status{Off: true}
	}
	return sandbox.Probe()
}

// shellConfig configures the process tools: sandboxed unless the
// configuration turns the sandbox off, the data root hidden from every
// command, and the egress proxy (used only where network is allowed)
// guarded like the web tools and limited to egress_allow's domains.
func (in *Instance) shellConfig() shell.Config {
	return shell.Config{
		Workspace:   in.Config.Workspace,
		SandboxOff:  in.Config.SandboxOff(),
		Hide:        []string{in.Config.DataRoot},
		EgressGuard: web.CheckPublic,
		EgressAllow: sandbox.AllowList(in.Config.EgressAllow),
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
	st := in.sandboxStatus()
	if st.Off || !st.Ready {
		in.Log.Warn(st.Summary())
		return
	}
	in.Log.Info(st.Summary())
}
