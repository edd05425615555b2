package files

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/avaagent/ava/tool"
)

// binarySniffLen is how much of a file decides whether it is binary.
const binarySniffLen = 8 << 10

// maxDirEntries caps a directory listing from read_file.
const maxDirEntries = 500

type readArgs struct {
	Path      string `json:"path" jsonschema:"file to read, relative to the workspace root (or an absolute path inside the workspace)"`
	StartLine int    `json:"start_line,omitempty" jsonschema:"first line to show, 1-based; default 1"`
	EndLine   int    `json:"end_line,omitempty" jsonschema:"last line to show, inclusive; default as many lines as fit in one page"`
}

// ReadFile returns the read_file tool.
func (t *Tools) ReadFile() tool.Tool {
	desc := fmt.Sprintf("Read a text file from the workspace, with line numbers (cat -n style). "+
		"Paths are relative to the workspace root; nothing outside the workspace can be read. "+
		"One call shows at most %d lines or about %d bytes; a longer file is paged and the result says "+
		"which start_line to call again with. Use start_line/end_line to read just the part you need "+
		"(for example around a line that search_codebase found). Binary files are refused; a directory "+
		"path lists its entries.", t.cfg.MaxReadLines, t.cfg.MaxReadBytes)
	s := inferSchema[readArgs]()
	setMin(s, "start_line", 1)
	setMin(s, "end_line", 1)
	return tool.NewFuncWithSchema("read_file", desc, s, t.readFile)
}

func (t *Tools) readFile(ctx context.Context, a readArgs) (tool.Result, error) {
	ws, err := t.workspaceFor(ctx)
	if err != nil {
		return pathResult("read_file", err)
	}
	ctx, cancel := t.callContext(ctx)
	defer cancel()
	start := max(a.StartLine, 1)
	if a.EndLine > 0 && a.EndLine < start {
		return tool.Errorf("read_file: end_line %d is before start_line %d", a.EndLine, start), nil
	}
	if strings.TrimSpace(a.Path) == "" {
		return tool.Errorf("read_file: path is empty; give a file path relative to the workspace"), nil
	}
	_, rel, err := ws.resolve(a.Path)
	if err != nil {
		return pathResult("read_file", err)
	}
	root, err := t.openTree(ws)
	if err != nil {
		return tool.Result{}, fmt.Errorf("read_file: %w", err)
	}
	defer root.release()
	f, dir, err := openRel(root, rel)
	if err != nil {
		return tool.Errorf("%s", openError("read_file", a.Path, err)), nil
	}
	if dir != nil {
		defer dir.release()
		return listDir(dir, rel)
	}
	defer f.Close()
	return t.readPage(ctx, f, rel, start, a.EndLine)
}

// openRel opens rel (slash-separated, "." for the workspace) below root
// without following a symlink: a regular file, or a folder with one
// holder, the caller.
func openRel(root *dirRef, rel string) (*os.File, *dirRef, error) {
	if rel == "." {
		root.acquire()
		return nil, root, nil
	}
	dirRel, name := splitRel(rel)
	d, err := descend(root, dirRel, nil)
	if err != nil {
		return nil, nil, err
	}
	defer d.release()
	return d.openEntry(name)
}

// pathResult turns a refused or missing path into a result for the model.
func pathResult(name string, err error) (tool.Result, error) {
	var pe *pathError
	if errors.As(err, &pe) {
		return tool.Errorf("%s: %s", name, pe.msg), nil
	}
	return tool.Result{}, fmt.Errorf("%s: %w", name, err)
}

// readPage shows lines start..end of f (end 0: as many as fit), and counts
// the file's lines to say where the page sits.
func (t *Tools) readPage(ctx context.Context, f *os.File, rel string, start, end int) (tool.Result, error) {
	br := bufio.NewReaderSize(f, 64<<10)
	head, err := br.Peek(binarySniffLen)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return tool.Errorf("read_file: cannot read %s: %v", rel, err), nil
	}
	if looksBinary(head) {
		return tool.Errorf("read_file: %s looks like a binary file; it was not read", rel), nil
	}
	lr := lineReader{br: br, keep: t.cfg.MaxLineLength + 1}
	var out strings.Builder
	lineNo, shownTo, full := 0, 0, false
	for {
		if lineNo%4096 == 0 && ctx.Err() != nil {
			return t.interrupted(ctx, "read_file"), nil
		}
		line, n, ok, err := lr.next()
		if err != nil {
			return tool.Errorf("read_file: cannot read %s: %v", rel, err), nil
		}
		if !ok {
			break
		}
		lineNo++
		if lineNo < start {
			continue
		}
		// Past the asked range, or the page is full: count the rest for
		// the footer and stop.
		stop := end > 0 && lineNo > end
		var text string
		if !stop {
			text = fmt.Sprintf("%6d\t%s\n", lineNo, cutLine(line, n, t.cfg.MaxLineLength))
			full = shownTo-start+1 >= t.cfg.MaxReadLines || (shownTo > 0 && out.Len()+len(text) > t.cfg.MaxReadBytes)
			stop = full
		}
		if stop {
			rest, err := countLines(ctx, br)
			if ctx.Err() != nil {
				return t.interrupted(ctx, "read_file"), nil
			}
			if err != nil {
				return tool.Errorf("read_file: cannot read %s: %v", rel, err), nil
			}
			lineNo += rest
			break
		}
		out.WriteString(text)
		shownTo = lineNo
	}
	return t.pageResult(out.String(), rel, start, shownTo, lineNo, full), nil
}

// pageResult adds a footer that places the page in the file.
func (t *Tools) pageResult(body, rel string, start, shownTo, total int, full bool) tool.Result {
	switch {
	case total == 0:
		return tool.Result{Output: fmt.Sprintf("(%s is empty)", rel)}
	case shownTo == 0:
		return tool.Errorf("read_file: start_line %d is past the end of %s (%d lines)", start, rel, total)
	case start == 1 && shownTo == total:
		return tool.Result{Output: body}
	case full:
		return tool.Result{Output: fmt.Sprintf("%s[showing lines %d-%d of %d (one call shows at most %d lines / %d bytes); call again with start_line=%d]",
			body, start, shownTo, total, t.cfg.MaxReadLines, t.cfg.MaxReadBytes, shownTo+1)}
	default:
		return tool.Result{Output: fmt.Sprintf("%s[showing lines %d-%d of %d]", body, start, shownTo, total)}
	}
}

// lineReader reads lines of any length, keeping at most keep bytes of each.
type lineReader struct {
	br   *bufio.Reader
	keep int
	buf  []byte
}

// next returns the next line without its line ending (cut to keep bytes),
// the line's full length, and false at the end of the input.
func (lr *lineReader) next() (line []byte, n int, ok bool, err error) {
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.br.ReadSlice('\n')
		n += len(chunk)
		if room := lr.keep - len(lr.buf); room > 0 {
			lr.buf = append(lr.buf, chunk[:min(room, len(chunk))]...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if n == 0 {
				return nil, 0, false, nil
			}
			return trimEOL(lr.buf), n, true, nil
		case err != nil:
			return nil, 0, false, err
		}
		line = trimEOL(lr.buf)
		return line, n - 1 - boolInt(bytes.HasSuffix(lr.buf, []byte("\r\n"))), true, nil
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// countLines counts the lines left in r, a final line without a newline
// included.
func countLines(ctx context.Context, r io.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	lines, last := 0, byte('\n')
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		n, err := r.Read(buf)
		if n > 0 {
			lines += bytes.Count(buf[:n], []byte{'\n'})
			last = buf[n-1]
		}
		if errors.Is(err, io.EOF) {
			if last != '\n' {
				lines++
			}
			return lines, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// looksBinary reports whether head, the start of a file, is binary: it
// holds a NUL byte, or more than a tenth of it is not valid UTF-8.
func looksBinary(head []byte) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	if utf8.Valid(head) {
		return false
	}
	invalid := 0
	for i := 0; i < len(head); {
		r, size := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && size == 1 {
			if !utf8.FullRune(head[i:]) {
				break // a character cut by the end of the sample
			}
			invalid++
		}
		i += size
	}
	return invalid*10 > len(head)
}

// listDir answers read_file on a directory with its entries.
func listDir(d *dirRef, rel string) (tool.Result, error) {
	entries, err := d.entries()
	if err != nil {
		return tool.Errorf("read_file: cannot list %s: %v", rel, err), nil
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%s is a directory with %d entries (read_file reads files; use search_codebase to find text):\n", rel, len(names))
	for i, n := range names {
		if i == maxDirEntries {
			fmt.Fprintf(&b, "[listing truncated: showed %d of %d entries]\n", maxDirEntries, len(names))
			break
		}
		b.WriteString(n)
		b.WriteByte('\n')
	}
	return tool.Result{Output: b.String()}, nil
}
