// Package storetest is the conformance suite of package store: one set of
// tests that every backend must pass, run from the backend's own tests
// against a real instance of it.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { … open a fresh store, close it in t.Cleanup … })
//	}
//
// The suite's subtests run in parallel, each on its own fresh store, and
// several hammer the store from hundreds of goroutines; run them with -race.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

// testCase is one conformance test, given a fresh store.
type testCase struct {
	name string
	fn   func(t *testing.T, s store.Store)
}

// Run runs the conformance suite. newStore must return a fresh, empty
// store for each call and close it when t ends.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	var cases []testCase
	cases = append(cases, sessionCases()...)
	cases = append(cases, runCases()...)
	cases = append(cases, transitionCases()...)
	cases = append(cases, fenceCases()...)
	cases = append(cases, pendingCases()...)
	cases = append(cases, memoryCases()...)
	cases = append(cases, boardCases()...)
	cases = append(cases, channelCases()...)
	cases = append(cases, reportCases()...)
	cases = append(cases, loginCases()...)
	cases = append(cases, idempotencyCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

// RunDurable runs the tests that need a store to outlive its process:
// open must open the store kept in dir (the same data for the same dir),
// and make closing it again at the end of t harmless. The suite closes a
// store and opens it again, as a restarted daemon does.
func RunDurable(t *testing.T, open func(t *testing.T, dir string) store.Store) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, reopen func() store.Store)
	}{
		{"ReopenKeepsEverything", testReopenKeepsEverything},
		{"AnnounceAfterReopen", testAnnounceAfterReopen},
		{"InterruptedAfterCrash", testInterruptedAfterCrash},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tc.fn(t, func() store.Store { return open(t, dir) })
		})
	}
}

// ctx returns a context that ends with the test, bounded so a deadlock
// fails the test instead of hanging it.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// must fails the test at once on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr fails the test unless errors.Is(err, target).
func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want one wrapping %v", err, target)
	}
}

// wantPlainErr fails the test unless err is non-nil and none of the
// store's sentinels: bad input must be refused as bad input.
func wantPlainErr(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("error = nil, want a validation error")
	}
	for _, s := range []error{store.ErrNotFound, store.ErrDuplicate, store.ErrInvalidTransition, store.ErrExpired} {
		if errors.Is(err, s) {
			t.Fatalf("error = %v, want a validation error, not %v", err, s)
		}
	}
}

// base is a fixed, whole-second instant the tests count from.
var base = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

// newRun returns a valid pending run with the given short ID and parent.
func newRun(short, parent string) store.Run {
	return store.Run{
		ID:            uuid.NewString(),
		ShortID:       short,
		SessionKey:    store.SubagentSessionPrefix + short,
		ParentSession: parent,
		ParentAgent:   "ava",
		Mode:          store.ModeSingle,
		Role:          "researcher",
		Task:          "find the answer",
		Model:         "anthropic/claude-haiku",
		Status:        lifecycle.Pending,
		CreatedAt:     base,
	}
}

// shortID returns the i-th test short ID, S-00000i in hex.
func shortID(i int) string { return fmt.Sprintf("S-%06x", i) }

// createRun stores r and returns it as the store holds it.
// A run asked for in a final status is created running and then moved
// there, as a new run always starts active.
func createRun(t *testing.T, s store.Store, r store.Run) store.Run {
	t.Helper()
	final := r.Status
	if final.Final() {
		r.Status = lifecycle.Running
	}
	must(t, s.CreateRun(ctx(t), r))
	if final.Final() {
		must(t, s.TransitionRun(ctx(t), r.ID, r.Owner, []lifecycle.Status{lifecycle.Running}, final, nil))
	}
	got, err := s.GetRun(ctx(t), r.ID)
	must(t, err)
	return got
}

// finish moves r from running (or pending) to status with a result.
func finish(t *testing.T, s store.Store, id string, status lifecycle.Status) {
	t.Helper()
	must(t, s.TransitionRun(ctx(t), id, "", lifecycle.Active, status, &store.RunFinish{
		Result: []byte(`{"summary":"done"}`), Tokens: 10, CostCents: 0.5, Iterations: 1,
	}))
}
