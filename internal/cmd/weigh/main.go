// Command weigh reports what the ava binary weighs the way users meet
// it: the size of the file, and the kernel's own count of the peak
// memory (the maximum resident set size, as getrusage and `/usr/bin/time
// -v` give it, not a sample) of
//
//   - `ava --version`;
//   - `ava run` delegating to eight subagents in parallel (the offline
//     scripted model: 200 ms before each answer, no network);
//   - a waiting `ava mcp`, with its resident memory split into private
//     anonymous memory (heap, stacks) and pages of files (the binary),
//     from /proc/PID/smaps_rollup, and how much of it is mapped in 2 MiB
//     pages (FilePmdMapped).
//
// Each binary is measured in two states of its pages. "as found": as
// they are in the page cache; with -build, as go build wrote them, which
// on a kernel that keeps files in large folios (ext4 since Linux 6.x)
// can be 2 MiB folios, each mapped whole by the first fault in it (the
// state `go install` and `go run` leave). "read back": the pages were
// dropped from the page cache (fsync, then POSIX_FADV_DONTNEED, as after
// a reboot or under memory pressure) and the runs read them back, in
// readahead's smaller folios.
//
//	go run ./internal/cmd/weigh -build            # builds the default (cgo) and the static binary
//	go run ./internal/cmd/weigh -ava /tmp/a,/tmp/b -reps 5
//
// docs/benchmarks.md has its figures.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// subagents is the size of the fan-out `ava run` delegates to.
const subagents = 8

func main() {
	bins := flag.String("ava", "", "comma-separated ava binaries to weigh")
	build := flag.Bool("build", false, "build the default (cgo) and the static (CGO_ENABLED=0) binary of this checkout and weigh them")
	ldflags := flag.String("ldflags", "", "with -build: the -ldflags given to go build")
	reps := flag.Int("reps", 5, "runs per figure (the median is reported)")
	flag.Parse()
	tmp, err := os.MkdirTemp("", "ava-weigh-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	var list []string
	if *bins != "" {
		list = strings.Split(*bins, ",")
	}
	if *build {
		for _, b := range []struct{ name, cgo string }{{"ava-cgo", "1"}, {"ava-static", "0"}} {
			out := filepath.Join(tmp, b.name)
			args := []string{"build", "-o", out}
			if *ldflags != "" {
				args = append(args, "-ldflags="+*ldflags)
			}
			cmd := exec.Command("go", append(args, "./cmd/ava")...)
			cmd.Env = append(os.Environ(), "CGO_ENABLED="+b.cgo)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				log.Fatalf("go build (CGO_ENABLED=%s): %v", b.cgo, err)
			}
			list = append(list, out)
		}
	}
	if len(list) == 0 {
		log.Fatal("nothing to weigh: give -ava or -build")
	}
	script := filepath.Join(tmp, "fanout.yaml")
	if err := os.WriteFile(script, []byte(fanoutScript(subagents)), 0o600); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("| binary | size | pages | `--version` max RSS | `run`, %d subagents, max RSS | waiting `ava mcp`: RSS | of it anonymous | of it file | in 2 MiB pages |\n", subagents)
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, bin := range list {
		if err := weigh(tmp, bin, script, *reps); err != nil {
			log.Fatalf("%s: %v", bin, err)
		}
	}
}

// weigh reports bin's figures as found and read back.
func weigh(tmp, bin, script string, reps int) error {
	st, err := os.Stat(bin)
	if err != nil {
		return err
	}
	cp := bin
	for _, state := range []string{"as found", "read back"} {
		if state == "read back" {
			if err := evict(cp); err != nil {
				return err
			}
		}
		version, err := medianMaxRSS(reps, func() (*exec.Cmd, error) { return avaCmd(tmp, cp, "", "--version"), nil })
		if err != nil {
			return fmt.Errorf("--version: %w", err)
		}
		run, err := medianMaxRSS(reps, func() (*exec.Cmd, error) {
			c := avaCmd(tmp, cp, "scripted/"+script, "run", "fan out")
			return c, nil
		})
		if err != nil {
			return fmt.Errorf("run: %w", err)
		}
		m, err := waitingMCP(tmp, cp)
		if err != nil {
			return fmt.Errorf("mcp: %w", err)
		}
		fmt.Printf("| %s | %.1f MB | %s | %s | %s | %s | %s | %s | %s |\n", filepath.Base(bin), float64(st.Size())/1e6, state,
			mib(version), mib(run), mib(m["Rss"]), mib(m["Anonymous"]), mib(m["Rss"]-m["Anonymous"]), mib(m["FilePmdMapped"]))
	}
	return nil
}

func mib(kb int64) string { return fmt.Sprintf("%.1f MiB", float64(kb)/1024) }

// avaCmd is bin with args on a fresh data root under tmp, the model
// model (empty: none configured, which is the offline one).
func avaCmd(tmp, bin, model string, args ...string) *exec.Cmd {
	root, err := os.MkdirTemp(tmp, "root-")
	if err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "AVA_DATA_ROOT=" + filepath.Join(root, "data"),
		"AVA_WORKSPACE=" + root, "AVA_CONFIRM=never", "AVA_MAX_CONCURRENT_SUBAGENTS=16"}
	if model != "" {
		cmd.Env = append(cmd.Env, "AVA_MODEL="+model)
	}
	return cmd
}

// medianMaxRSS runs the command reps times and returns the median of
// the kernel's maximum resident set size (KiB) of the process and its
// descendants (wait4's rusage). The kernel counts in it the peak of the
// memory the child was started from: Go starts a command with
// vfork-like clone, so that is this process's own peak, which must
// therefore stay below what it measures; it is checked.
func medianMaxRSS(reps int, mk func() (*exec.Cmd, error)) (int64, error) {
	var peaks []int64
	for range reps {
		cmd, err := mk()
		if err != nil {
			return 0, err
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("%v: %w\n%s", cmd.Args, err, out.String())
		}
		if cmd.Args[1] == "run" && !strings.Contains(out.String(), "all done") {
			return 0, fmt.Errorf("ava run did not finish the delegation:\n%s", out.String())
		}
		peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
		var self syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
			return 0, err
		}
		if self.Maxrss >= peak {
			return 0, fmt.Errorf("%v: its peak (%d KiB) is not above this process's own (%d KiB), which the kernel counts in it", cmd.Args, peak, self.Maxrss)
		}
		peaks = append(peaks, peak)
	}
	slices.Sort(peaks)
	return peaks[len(peaks)/2], nil
}

// waitingMCP starts `ava mcp`, lets it settle, and reads its
// smaps_rollup (KiB by field).
func waitingMCP(tmp, bin string) (map[string]int64, error) {
	cmd := avaCmd(tmp, bin, "")
	cmd.Args = append(cmd.Args, "mcp")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() {
		in.Close() // end of input ends the server
		cmd.Wait()
	}()
	time.Sleep(2 * time.Second)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", cmd.Process.Pid))
	if err != nil {
		return nil, err
	}
	m := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[2] == "kB" {
			m[strings.TrimSuffix(f[0], ":")], _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	return m, nil
}

// evict writes the file's pages back and drops them from the page cache.
func evict(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return err
	}
	// POSIX_FADV_DONTNEED is 4 on Linux.
	if _, _, e := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, 4, 0, 0); e != 0 {
		return fmt.Errorf("fadvise: %w", e)
	}
	return nil
}

// fanoutScript is an offline script: the orchestrator delegates n tasks
// in parallel, each subagent answers, and the orchestrator says "all
// done"; every answer comes 200 ms after its request, as a model's first
// byte would.
func fanoutScript(n int) string {
	var tasks []string
	for i := range n {
		tasks = append(tasks, fmt.Sprintf("{role: researcher, task: part %d}", i))
	}
	return `conversations:
  - match: "specialized researcher subagent"
    turns:
      - delay: 200ms
        text: |
          part done
          ` + "```json" + `
          {"output": "part done", "summary": "part done", "confidence": 1}
          ` + "```" + `
  - replies:
      - when: {result: {}}
        delay: 200ms
        text: all done
      - delay: 200ms
        tool_calls: [{name: spawn_subagents, args: {mode: parallel, tasks: [` + strings.Join(tasks, ", ") + `]}}]
`
}
