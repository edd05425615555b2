package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// systemDirs are read and executed by every sandboxed command.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/nix/store"}

// etcAllowed are the paths under /etc a command may read: what a shell,
// the dynamic loader, the C library's name services and resolver,
// locales and time zones, TLS clients (public certificates and OpenSSL's
// configuration), Python, Perl, Java, git and the usual tools read.
// Everything else in /etc is unreadable: password hashes, ssh host keys,
// TLS private keys, sudo rules, machine credentials, files that often
// hold tokens or proxy passwords (/etc/environment, pip.conf, npmrc,
// wgetrc), and whatever a system keeps there under a name of its own.
// Missing paths are skipped.
var etcAllowed = []string{
	// Shells and terminals.
	"profile", "profile.d", "bash.bashrc", "bashrc", "bash_completion", "bash_completion.d", "inputrc",
	"shells", "terminfo", "zshrc", "zsh", "alternatives",
	// Dynamic loader.
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ld.so.preload",
	// Name services, resolver, users and groups (no password hashes).
	"nsswitch.conf", "passwd", "group", "hosts", "host.conf", "resolv.conf", "gai.conf", "services",
	"protocols", "networks", "rpc", "ethertypes", "netconfig", "hostname", "mtab",
	// Locales and time.
	"locale.alias", "locale.conf", "locale.gen", "default/locale", "localtime", "timezone",
	// Public certificates and TLS libraries' configuration.
	"ssl/certs", "ssl/openssl.cnf", "ca-certificates", "ca-certificates.conf", "pki/tls/certs",
	"pki/tls/cert.pem", "pki/tls/openssl.cnf", "pki/ca-trust/extracted", "crypto-policies", "gnutls",
	// Interpreters and tools.
	"perl", "gitconfig", "gitattributes", "vim", "fonts", "xml",
	"mime.types", "magic", "magic.mime", "ssh/ssh_config", "ssh/ssh_config.d",
	// What the system is.
	"os-release", "lsb-release", "debian_version", "redhat-release", "fedora-release", "system-release",
	"alpine-release", "arch-release",
}

// etcAllowedPrefixes are prefixes of names in /etc a command may read:
// the configuration of each installed Python and Java.
var etcAllowedPrefixes = []string{"python", "java"}

// Landlock access rights, as sets.
const (
	llFile   = llsys.AccessFSExecute | llsys.AccessFSWriteFile | llsys.AccessFSReadFile | llsys.AccessFSTruncate | llsys.AccessFSIoctlDev
	llRead   = llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir
	llRWFile = llsys.AccessFSWriteFile | llsys.AccessFSReadFile | llsys.AccessFSTruncate | llsys.AccessFSIoctlDev
)

// landlockABI returns the kernel's Landlock ABI version, 0 when absent.
func landlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// handledFS is every filesystem right the ABI knows: all are denied but
// what a rule allows.
func handledFS(abi int) uint64 {
	switch {
	case abi >= 5:
		return 1<<16 - 1
	case abi >= 3:
		return 1<<15 - 1
	case abi == 2:
		return 1<<14 - 1
	}
	return 1<<13 - 1
}

// llRule is one path and the rights it grants beneath it.
type llRule struct {
	path   string
	access uint64
}

// applyLandlock restricts this thread, and so the command it forks, to
// the folders the sandbox allows, and scopes abstract Unix sockets and
// signals to the sandbox (ABI 6 and up). Network access is left to the
// network namespace. Only the calling thread is restricted: the helper's
// other threads run its own code, never the command's.
func applyLandlock(s Spec, m mountState) (int, error) {
	abi := landlockABI()
	if abi < 1 {
		return 0, fmt.Errorf("the kernel does not support Landlock")
	}
	all := handledFS(abi)
	ws := all
	if s.WorkspaceReadOnly {
		ws = llRead
	}
	rules := []llRule{{s.Workspace, ws}, {s.Scratch, all},
		{"/dev/null", llRWFile}, {"/dev/zero", llRWFile}, {"/dev/full", llRWFile}, {"/dev/random", llRead}, {"/dev/urandom", llRead}}
	for _, d := range systemDirs {
		rules = append(rules, llRule{d, llRead})
	}
	for _, m := range s.Mounts {
		access := uint64(llRead)
		if m.Write {
			access = all
		}
		rules = append(rules, llRule{m.Path, access})
	}
	for _, p := range etcEntries() {
		rules = append(rules, llRule{p, llRead})
	}
	for _, d := range m.private {
		rules = append(rules, llRule{d, all})
	}
	if m.freshProc {
		rules = append(rules, llRule{"/proc", llRead})
	}
	attr := llsys.RulesetAttr{HandledAccessFS: all}
	if abi >= 6 {
		attr.Scoped = llsys.ScopeAbstractUnixSocket | llsys.ScopeSignal
	}
	fd, err := llsys.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return abi, fmt.Errorf("create ruleset: %w", err)
	}
	defer unix.Close(fd)
	for _, r := range rules {
		if err := addRule(fd, r, all); err != nil {
			return abi, err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return abi, fmt.Errorf("no_new_privs: %w", err)
	}
	if err := llsys.LandlockRestrictSelf(fd, 0); err != nil {
		return abi, fmt.Errorf("restrict self: %w", err)
	}
	return abi, nil
}

// addRule grants r's rights beneath its path, limited to what a file
// may have when the path is not a folder; a missing path is skipped.
func addRule(ruleset int, r llRule, handled uint64) error {
	fd, err := unix.Open(r.path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil // absent here: nothing to allow
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", r.path, err)
	}
	access := r.access & handled
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= llFile
	}
	if err := llsys.LandlockAddPathBeneathRule(ruleset, &llsys.PathBeneathAttr{AllowedAccess: access, ParentFd: fd}, 0); err != nil {
		return fmt.Errorf("allow %s: %w", r.path, err)
	}
	return nil
}

// etcEntries are the paths in /etc a command may read: the allowed
// ones, and the names in /etc that start with an allowed prefix.
func etcEntries() []string {
	out := make([]string, 0, len(etcAllowed)+4)
	for _, p := range etcAllowed {
		out = append(out, filepath.Join("/etc", p))
	}
	entries, err := os.ReadDir("/etc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		for _, prefix := range etcAllowedPrefixes {
			if strings.HasPrefix(e.Name(), prefix) {
				out = append(out, filepath.Join("/etc", e.Name()))
				break
			}
		}
	}
	return out
}
