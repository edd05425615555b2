package files

import (
	"bytes"
	"errors"
)

// errTooLarge marks a file over the size limit.
var errTooLarge = errors.New("file too large")

// scanner searches files one at a time, reusing its buffers. Each worker
// has its own.
type scanner struct {
	q       *query
	maxSize int64
	buf     []byte
	lower   []byte
}

// scanBatch searches the files of b, filling b.results, and releases
// b's folder.
func (s *scanner) scanBatch(b *batch) {
	defer b.dir.release()
	b.results = make([]scanResult, len(b.names))
	for i, name := range b.names {
		b.results[i] = s.scan(b.dir, name, b.rels[i])
	}
}

func (s *scanner) scan(d *dirRef, name, rel string) scanResult {
	var r scanResult
	data, err := d.readWhole(name, s.maxSize, &s.buf)
	switch {
	case errors.Is(err, errTooLarge):
		r.large = true
		return r
	case err != nil:
		r.unreadable = true
		return r
	}
	if looksBinary(data[:min(len(data), binarySniffLen)]) {
		r.binary = true
		return r
	}
	if spans := s.find(data); len(spans) > 0 {
		r.hit = s.hit(rel, data, spans)
	}
	return r
}

// span is one matching line: its number and byte range (no line ending).
type span struct {
	no, start, end int
}

// find returns the matching lines of data, at most maxMatches+1 of them
// (one more than can be shown, so the caller knows there were more).
func (s *scanner) find(data []byte) []span {
	if s.q.pat.lit != nil {
		return s.findByLiteral(data)
	}
	if s.q.pat.whole != nil && !s.q.pat.whole.Match(data) {
		return nil
	}
	var spans []span
	limit := s.q.maxMatches + 1
	for no, start := 1, 0; start < len(data) && len(spans) < limit; no++ {
		end := bytes.IndexByte(data[start:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += start
		}
		if s.q.pat.line.Match(trimCR(data[start:end])) {
			spans = append(spans, span{no: no, start: start, end: end})
		}
		start = end + 1
	}
	return spans
}

// findByLiteral jumps from one occurrence of the required literal to the
// next and runs the regular expression only on those lines.
func (s *scanner) findByLiteral(data []byte) []span {
	hay := data
	if s.q.pat.fold {
		s.lower = lowerASCII(s.lower[:0], data)
		hay = s.lower
	}
	var spans []span
	limit := s.q.maxMatches + 1
	no, counted, pos := 1, 0, 0
	for pos < len(data) && len(spans) < limit {
		i := bytes.Index(hay[pos:], s.q.pat.lit)
		if i < 0 {
			break
		}
		at := pos + i
		start := bytes.LastIndexByte(data[:at], '\n') + 1
		end := bytes.IndexByte(data[at:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += at
		}
		no += bytes.Count(data[counted:start], []byte{'\n'})
		counted = start
		if s.q.pat.line.Match(trimCR(data[start:end])) {
			spans = append(spans, span{no: no, start: start, end: end})
		}
		pos = end + 1
	}
	return spans
}

// hit builds a file's hit: its matches with their context lines.
func (s *scanner) hit(rel string, data []byte, spans []span) *fileHit {
	h := &fileHit{path: rel, matches: len(spans)}
	c := s.q.context
	if c == 0 {
		h.lines = make([]hitLine, len(spans))
		for i, sp := range spans {
			h.lines[i] = hitLine{no: sp.no, text: showLine(data[sp.start:sp.end]), match: true}
		}
		return h
	}
	starts := lineStarts(data)
	shown := 0 // the last line number added
	for i, sp := range spans {
		hi := min(len(starts), sp.no+c)
		for n := max(shown+1, sp.no-c); n <= hi; n++ {
			end := len(data)
			if n < len(starts) {
				end = starts[n]
			}
			isMatch := n == sp.no || (i+1 < len(spans) && n == spans[i+1].no)
			if isMatch && n != sp.no {
				break // the next match's turn
			}
			h.lines = append(h.lines, hitLine{no: n, text: showLine(data[starts[n-1]:end]), match: isMatch})
			shown = n
		}
	}
	return h
}

// showLine is a line as the search tools print it.
func showLine(line []byte) string {
	line = trimEOL(line)
	return cutLine(line, len(line), searchLineLength)
}

// lineStarts returns the byte offset of each line of data.
func lineStarts(data []byte) []int {
	if len(data) == 0 {
		return nil
	}
	starts := []int{0}
	for i := 0; ; {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		if i == len(data) {
			break
		}
		starts = append(starts, i)
	}
	return starts
}

func trimCR(b []byte) []byte {
	return bytes.TrimSuffix(b, []byte{'\r'})
}

// lowerASCII appends data lower-cased (ASCII letters only) to dst.
func lowerASCII(dst, data []byte) []byte {
	dst = append(dst, data...)
	for i, c := range dst {
		if 'A' <= c && c <= 'Z' {
			dst[i] = c + 'a' - 'A'
		}
	}
	return dst
}
