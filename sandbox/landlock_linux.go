package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// systemDirs are read and executed by every sandboxed command.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/nix/store"}

// etcSecrets are entries of /etc a command may not read: password
// hashes, host keys, private TLS keys, sudo rules. Everything else in
// /etc (resolver, certificates, locale, interpreters' configuration) is
// readable. /etc/ssl is replaced by its public certificates.
var etcSecrets = []string{"shadow", "shadow-", "gshadow", "gshadow-", "ssh", "sudoers", "sudoers.d", "ssl",
	"security", "krb5.keytab", "machine-id", "credstore", "credstore.encrypted", "wireguard", "NetworkManager"}

// landlockABI returns the kernel's Landlock ABI version, 0 when absent.
func landlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// applyLandlock restricts this process and everything it starts to the
// folders the sandbox allows, and scopes abstract Unix sockets and
// signals to the sandbox (ABI 6 and up). Network access is left to the
// network namespace.
func applyLandlock(s Spec, m mountState, self string) (int, error) {
	abi := landlockABI()
	if abi < 1 {
		return 0, fmt.Errorf("the kernel does not support Landlock")
	}
	ws := landlock.RWDirs(s.Workspace)
	if s.WorkspaceReadOnly {
		ws = landlock.RODirs(s.Workspace)
	}
	rules := []landlock.Rule{
		landlock.RODirs(systemDirs...).IgnoreIfMissing(),
		landlock.RODirs("/etc/ssl/certs").IgnoreIfMissing(),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full").IgnoreIfMissing(),
		landlock.ROFiles("/dev/random", "/dev/urandom").IgnoreIfMissing(),
		ws,
		landlock.RWDirs(s.Scratch),
		// The helper's own executable, run again as the second stage.
		landlock.PathAccess(llsys.AccessFSExecute|llsys.AccessFSReadFile, self),
	}
	rules = append(rules, etcRules()...)
	if len(m.private) > 0 {
		rules = append(rules, landlock.RWDirs(m.private...))
	}
	if m.freshProc {
		rules = append(rules, landlock.RODirs("/proc"))
	}
	cfg := landlock.V7.BestEffort()
	if err := cfg.RestrictPaths(rules...); err != nil {
		return abi, fmt.Errorf("restrict paths: %w", err)
	}
	if abi >= 6 {
		if err := cfg.RestrictScoped(); err != nil {
			return abi, fmt.Errorf("scope signals and abstract sockets: %w", err)
		}
	}
	return abi, nil
}

// etcRules allow reading /etc's entries but its secrets.
func etcRules() []landlock.Rule {
	entries, err := os.ReadDir("/etc")
	if err != nil {
		return nil
	}
	var dirs, files []string
	for _, e := range entries {
		if slices.Contains(etcSecrets, e.Name()) {
			continue
		}
		p := filepath.Join("/etc", e.Name())
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			continue
		case fi.IsDir():
			dirs = append(dirs, p)
		default:
			files = append(files, p)
		}
	}
	return []landlock.Rule{landlock.RODirs(dirs...).IgnoreIfMissing(), landlock.ROFiles(files...).IgnoreIfMissing()}
}
