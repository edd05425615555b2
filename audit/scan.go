package audit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/avaagent/ava/event"
)

// MaxLineSize is the longest line a reader accepts; longer lines are
// skipped and reported.
const MaxLineSize = 16 << 20

// maxSkips is how many skips [Scan] and queries list one by one; further
// skips are counted in one last Skip.
const maxSkips = 1000

// Skip is a line a reader could not use.
type Skip struct {
	File string
	// Line is the 1-based line number in File.
	Line   int
	Reason string
}

// String is "file:line: reason".
func (s Skip) String() string { return fmt.Sprintf("%s:%d: %s", s.File, s.Line, s.Reason) }

// Entry is one audit log line read back.
type Entry struct {
	Event event.Event
	// Raw is the line as stored, without its newline. In a ScanEntries
	// or Follow callback it is valid only during the call.
	Raw  []byte
	File string
	Line int
}

// Scan calls fn with every event in the audit file at path, in file
// order, and returns the lines it skipped (a torn last line, corrupt or
// over-long lines): at most 1000 one by one, then one Skip (line 0)
// counting the rest. fn's error stops the scan and is returned.
func Scan(path string, fn func(ev event.Event) error) ([]Skip, error) {
	var sk skipList
	err := ScanEntries(path, func(e Entry) error { return fn(e.Event) }, sk.add)
	return sk.result(), err
}

// ScanEntries calls fn with every entry of the audit file at path, in
// file order, and onSkip (when non-nil) with every line it skips, as soon
// as it meets it. It reads in constant memory (one line at a time, lines
// up to [MaxLineSize]). fn's error stops the scan and is returned.
func ScanEntries(path string, fn func(Entry) error, onSkip func(Skip)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("scan audit log: %w", err)
	}
	defer f.Close()
	ls := lineScan{path: path, final: true, onSkip: onSkip}
	_, err = ls.run(f, func(raw []byte, no int, complete bool) error {
		ev, ok := ls.decode(raw, no, complete)
		if !ok {
			return nil
		}
		return fn(Entry{Event: ev, Raw: raw, File: path, Line: no})
	})
	return err
}

// lineScan splits a stream into lines.
type lineScan struct {
	path string
	// line is the number of lines before the stream's start.
	line int
	// final means the stream is complete: an unterminated last segment
	// is a (possibly torn) line, not one still being written.
	final  bool
	onSkip func(Skip)
	long   []byte
}

func (ls *lineScan) skip(no int, format string, args ...any) {
	if ls.onSkip != nil {
		ls.onSkip(Skip{File: ls.path, Line: no, Reason: fmt.Sprintf(format, args...)})
	}
}

// run calls fn with each non-empty line (without its newline) and
// returns how many bytes of complete lines it consumed. When ls.final,
// an unterminated last segment is passed with complete=false; otherwise
// it is left unconsumed.
func (ls *lineScan) run(r io.Reader, fn func(raw []byte, no int, complete bool) error) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var consumed int64
	for {
		raw, n, tooLong, err := ls.readLine(br)
		if errors.Is(err, io.EOF) {
			if n > 0 && ls.final {
				return consumed, ls.emit(raw, ls.line+1, false, tooLong, n, fn)
			}
			return consumed, nil
		}
		if err != nil {
			return consumed, fmt.Errorf("read %s: %w", ls.path, err)
		}
		consumed += int64(n)
		ls.line++
		if err := ls.emit(raw, ls.line, true, tooLong, n, fn); err != nil {
			return consumed, err
		}
	}
}

func (ls *lineScan) emit(raw []byte, no int, complete, tooLong bool, n int, fn func([]byte, int, bool) error) error {
	if tooLong {
		ls.skip(no, "line of %d bytes is longer than the %d byte limit", n, MaxLineSize)
		return nil
	}
	raw = bytes.TrimRight(raw, "\r\n")
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	return fn(raw, no, complete)
}

// readLine returns the next line including its newline (without one at
// EOF, with io.EOF), its length n, and whether it exceeded MaxLineSize
// (then raw is nil).
func (ls *lineScan) readLine(br *bufio.Reader) (raw []byte, n int, tooLong bool, err error) {
	ls.long = ls.long[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		n += len(chunk)
		if !tooLong && n > MaxLineSize {
			tooLong, ls.long = true, ls.long[:0]
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if !tooLong {
				ls.long = append(ls.long, chunk...)
			}
			continue
		case err != nil && !errors.Is(err, io.EOF):
			return nil, n, tooLong, err
		}
		if tooLong {
			return nil, n, true, err
		}
		if len(ls.long) > 0 {
			ls.long = append(ls.long, chunk...)
			chunk = ls.long
		}
		return chunk, n, false, err
	}
}

// decode parses one line as an event, reporting a skip when it cannot.
func (ls *lineScan) decode(raw []byte, no int, complete bool) (event.Event, bool) {
	var ev event.Event
	err := ev.UnmarshalJSON(raw)
	if err == nil && ev.Type == "" {
		err = errors.New("no eventType")
	}
	if err == nil {
		return ev, true
	}
	if !complete {
		ls.skip(no, "torn last line (no newline at end of file, %d bytes): %s", len(raw), err.Error())
	} else {
		ls.skip(no, "not an audit entry: %s", err.Error())
	}
	return ev, false
}

// skipList collects skips up to maxSkips and counts the rest.
type skipList struct {
	list []Skip
	more int
}

func (s *skipList) add(sk Skip) {
	if len(s.list) < maxSkips {
		s.list = append(s.list, sk)
		return
	}
	s.more++
}

func (s *skipList) result() []Skip {
	if s.more == 0 {
		return s.list
	}
	return append(s.list, Skip{Reason: fmt.Sprintf("%d more lines skipped and not listed", s.more)})
}
