// Package doclinks holds the test that keeps the documentation's links
// true: every relative link in README.md and docs/*.md names a file that
// exists and, with a #fragment, a heading that file has. It has no code
// of its own.
package doclinks
