// Package sandbox runs Ava's process tools (run_bash, python_exec) in a
// contained process tree on Linux.
//
// A sandboxed command is started through a helper: Ava re-executes its
// own binary (/proc/self/exe) with argv[0] set to InitArg0, and this
// package's init function turns that process into the helper before main
// runs, so every binary that links the process tools (test binaries
// included) can serve as its own helper. The helper is created with new
// user, PID, mount, network, IPC and UTS namespaces (the Ava user mapped
// to root inside, nothing else mapped) and SIGKILL as its parent-death
// signal. It is the first process of the PID namespace: when it dies,
// because the command ended, Ava killed it, or Ava itself died (even by
// SIGKILL, through the parent-death signal), the kernel kills every
// process left in the namespace, setsid or not.
//
// Before it starts the command, the helper, inside its namespaces:
//
//   - closes every descriptor it inherited but its own pipes, which it
//     keeps close-on-exec, and catches the signals that would make the Go
//     runtime dump its goroutines;
//   - mounts tmpfs over /tmp, /var/tmp, /run, /dev/shm (one between them,
//     sized from the memory limit), Ava's $HOME and the data root (hiding
//     their files and the Unix sockets in them), then binds the workspace
//     and the per-run scratch folder back at their own paths, mounts the
//     workspace's control files (.ava, .git, …) read-only over
//     themselves, and mounts a fresh /proc that shows only the sandbox's
//     processes;
//   - brings up a private loopback device; with network allowed, it
//     listens on 127.0.0.1:ProxyPort and relays every connection to Ava's
//     egress proxy (a Unix socket in the scratch folder), which only
//     tunnels to public addresses (see Proxy); without, nothing leaves;
//   - drops every capability from the bounding set, so the command has
//     none even as root of its namespace;
//   - applies Landlock: system folders (/usr, /bin, /sbin, /lib*, /opt,
//     an allow-list of /etc) read and execute, a few device files, the
//     fresh /proc and the private /tmp, the workspace read-write
//     (read-only if asked), the scratch folder read-write, nothing else;
//   - installs a seccomp filter refusing the obvious escapes (ptrace,
//     mount, new namespaces, keyctl, bpf, perf_event_open, kexec, module
//     loading, io_uring, memfd_secret, vsock sockets, …).
//
// Capabilities, Landlock and seccomp are applied to the helper's main
// thread only, the one that forks the command (the helper's other
// threads run its own relay code). The command starts as /bin/sh held on
// a pipe until the helper has set its rlimits with prlimit (processes,
// address space, CPU time, file size), then executes it with the
// allow-listed environment the caller gave. Where Ava may create a cgroup
// with the pids controller (v2 delegated, or v1 writable), the helper is
// put in one of its own before anything starts, capping its tasks: the
// kernel does not apply RLIMIT_NPROC to a sandbox whose user is root on
// the host. The helper reaps every orphan, relays SIGTERM to the whole
// namespace, and reports how the command ended on a status pipe.
// Whatever is still running when the command exits is killed with the
// namespace.
//
// Probe reports which of these protections this machine supports; where
// one is missing the process tools refuse to run unless AVA_SANDBOX=off.
package sandbox
