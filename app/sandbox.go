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

// harden marks the process non-dumpable, so no command can read its
// memory or environment through /proc, and what it inherited
// close-on-exec, so no child gets it. A sandbox the configuration turns
// off is a warning at once; what this machine's sandbox gives is found
// out on the first process tool call (sandbox.Probe starts a process),
// or at start by a daemon (ReportSandbox), not by every command.
func (in *Instance) harden() {
	if err := sandbox.HardenSelf(); err != nil {
		in.Log.Warn("could not harden the process (non-dumpable, inherited descriptors close-on-exec)", "err", err)
	}
	if in.Config.SandboxOff() {
		in.Log.Warn(sandbox.Status{Off: true}.Summary())
	}
}

// ReportSandbox logs which protections the process tools have on this
// machine: a warning when they are missing (a daemon says so at start;
// with the sandbox off, harden already warned).
func (in *Instance) ReportSandbox() {
	if in.Config.SandboxOff() {
		return
	}
	st := in.sandboxStatus()
	if !st.Ready {
		in.Log.Warn(st.Summary())
		return
	}
	in.Log.Info(st.Summary())
}
