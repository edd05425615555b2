package redact

import (
	"bytes"
	"slices"
)

// minAssignedLen is the shortest value of a secret assignment that is
// masked ("password: none" is prose, not a secret).
const minAssignedLen = 6

// secretNameEnds end the names whose assigned values are masked
// (lower-case; names are compared ignoring case).
var secretNameEnds = [][]byte{[]byte("_key"), []byte("_token"), []byte("_secret"), []byte("_pass"), []byte("_passwd"),
	[]byte("_pwd"), []byte("password"), []byte("secret_key_base")}

// longestNameEnd is the length of the longest of secretNameEnds.
const longestNameEnd = 15

// findAssignments finds the values assigned to secret-looking names:
// NAME=value, name: value, "name": "value" and the same inside a JSON
// string (\"name\": \"value\"). A value is a run of at least six bytes
// without space, quote, backslash or separator, and not only digits; the
// name, the sign and the quote are kept. It returns locations as
// regexp.FindAllSubmatchIndex does.
func findAssignments(b []byte) [][]int {
	locs := assignmentsAt(b, ':')
	if eq := assignmentsAt(b, '='); len(eq) > 0 {
		locs = append(locs, eq...)
		slices.SortFunc(locs, func(x, y []int) int { return x[0] - y[0] })
	}
	return locs
}

// assignmentsAt finds the assignments whose sign is sign. It jumps from
// one sign to the next with bytes.IndexByte, which is much faster than
// looking at every byte.
func assignmentsAt(b []byte, sign byte) [][]int {
	var locs [][]int
	for i := 0; ; i++ {
		j := bytes.IndexByte(b[i:], sign)
		if j < 0 {
			return locs
		}
		i += j
		if !secretNameBefore(b, i) {
			continue
		}
		start, end := assignedValue(b, i+1)
		if end-start >= minAssignedLen && !isDigits(b[start:end]) {
			locs = append(locs, []int{start, end})
			i = end - 1
		}
	}
}

// secretNameBefore reports whether the name before the sign at i, past
// any quotes, backslashes and spaces, ends like a secret's name.
func secretNameBefore(b []byte, i int) bool {
	k := i
	for k > 0 && isNameGap(b[k-1]) {
		k--
	}
	if k < 3 || !endsLikeSecretName(b[k-3:k]) {
		return false // the common case: no name ending ends with these letters
	}
	var buf [longestNameEnd]byte
	n := min(k, longestNameEnd)
	low := buf[:n]
	for j, c := range b[k-n : k] {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		low[j] = c
	}
	last := low[n-1]
	for _, end := range secretNameEnds {
		if end[len(end)-1] == last && bytes.HasSuffix(low, end) {
			return true
		}
	}
	return false
}

// isNameGap reports whether c may stand between a name and its sign.
func isNameGap(c byte) bool {
	switch c {
	case ' ', '\t', '"', '\'', '\\':
		return true
	}
	return false
}

// endsLikeSecretName reports whether the three bytes tail, ignoring
// case, end one of secretNameEnds: a quick test that rules out almost
// every name (JSON keys such as "type" and "inputTokens" included).
func endsLikeSecretName(tail []byte) bool {
	var low [3]byte
	for i, c := range tail[:3] {
		low[i] = c | 0x20
	}
	switch string(low[:]) {
	case "key", "ken", "ret", "ass", "swd", "pwd", "ord", "ase":
		return true
	}
	return false
}

// assignedValue returns the span of the value that starts at or after
// i: past spaces, one backslash and one quote.
func assignedValue(b []byte, i int) (start, end int) {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	if i < len(b) && b[i] == '\\' {
		i++
	}
	if i < len(b) && (b[i] == '"' || b[i] == '\'') {
		i++
	}
	end = i
	for end < len(b) && isValueByte(b[end]) {
		end++
	}
	return i, end
}

// isValueByte reports whether c can be part of an assigned secret.
func isValueByte(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', '"', '\'', '\\', ',', ';', '&', '<', '>':
		return false
	}
	return c > ' '
}
