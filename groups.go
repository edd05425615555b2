package ava

import (
	"context"
	"fmt"
	"time"

	"github.com/avaagent/ava/subagent"
)

// Group is a parallel or chain group this process runs: its members so
// far (a chain's later steps join as they start), its end, its
// cancellation. SpawnGroup returns it.
type Group struct {
	r *Runtime
	g *subagent.Group
}

// GroupSpawned is what a group spawn did: it started the group, or (when
// the confirmation policy asks for it) made a proposal the person decides
// (Decide). Exactly one is set, as in Spawned.
type GroupSpawned struct {
	Group    *Group
	Proposal *Proposal
}

// SpawnGroup starts a parallel or chain group for the main session parent
// ("" : on its own), or proposes it; the rules of Spawn apply (hierarchy,
// limits, confirmation policy). The running group is returned to wait for
// or cancel (its Members are what every surface shows). A request with
// Fork set, or a member with context_mode fork, is ErrInvalid: a spawn
// through the runtime has no conversation to fork. Its other errors are
// Spawn's.
func (r *Runtime) SpawnGroup(ctx context.Context, parent string, req GroupRequest, user, rationale string) (GroupSpawned, error) {
	if err := r.writable(); err != nil {
		return GroupSpawned{}, err
	}
	if err := r.modelReady(req.Configs...); err != nil {
		return GroupSpawned{}, err
	}
	if len(req.Fork) > 0 {
		return GroupSpawned{}, invalidf("group: Fork is the orchestrator's own conversation; a spawn through the runtime has none to fork")
	}
	for i, t := range req.Configs {
		if err := CheckSpawn(t); err != nil {
			return GroupSpawned{}, fmt.Errorf("task %d: %w", i+1, err)
		}
	}
	caller, err := r.caller(ctx, parent, user)
	if err != nil {
		return GroupSpawned{}, err
	}
	req.Parent, req.User = caller, user
	g, p, err := r.in.Subagent.SpawnGroupOrPropose(context.WithoutCancel(ctx), req, rationale)
	if err != nil {
		return GroupSpawned{}, fmt.Errorf("spawn group: %w", err)
	}
	if p != nil {
		mp := r.maskProposal(*p)
		return GroupSpawned{Proposal: &mp}, nil
	}
	return GroupSpawned{Group: &Group{r: r, g: g}}, nil
}

// ID is the group's ID (the GroupID of its members).
func (g *Group) ID() string { return g.g.ID }

// memberReadTimeout bounds the reads of a group's members' figures.
const memberReadTimeout = 5 * time.Second

// Members are the members started so far, as every surface shows them.
func (g *Group) Members() []Subagent {
	hs := g.g.Handles()
	out := make([]Subagent, 0, len(hs))
	ctx, cancel := context.WithTimeout(context.Background(), memberReadTimeout)
	defer cancel()
	for _, h := range hs {
		st, err := g.r.in.Subagent.Run(ctx, h.ID())
		if err != nil { // the store cannot answer: the live view alone
			st = h.Status()
		}
		sa := fromStatus(st)
		sa.GroupID = g.g.ID
		out = append(out, sa)
	}
	return out
}

// Done is closed when every member has ended (a chain: when it stopped).
func (g *Group) Done() <-chan struct{} { return g.g.Done() }

// Wait waits until the group has ended and returns its results in task
// order (a chain's steps that never started as cancelled), masked.
func (g *Group) Wait(ctx context.Context) ([]Result, error) {
	rs, err := g.g.Wait(ctx)
	if err != nil {
		return nil, err
	}
	for i := range rs {
		rs[i] = rs[i].Masked(g.r.in.Redactor)
	}
	return rs, nil
}

// Cancel stops every member; each ends cancelled.
func (g *Group) Cancel() { g.g.Cancel() }

// SpentCents is what the members have spent together.
func (g *Group) SpentCents() float64 { return g.g.SpentCents() }
