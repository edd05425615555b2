package mcpclient

import (
	"slices"
	"sort"
)

// Specs returns every server's definition, sorted by name.
func (p *Pool) Specs() []Spec {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Spec, 0, len(p.servers))
	for _, s := range p.servers {
		out = append(out, s.spec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Replace makes specs the pool's servers (a reload of the
// configuration; the caller checked them, as New and Add would): a
// server whose definition is unchanged keeps running, a new one starts
// on first use, and one removed or defined differently is stopped (its
// whole process group) in the background, a call in progress on it
// ending with an error. It returns the names of the servers added,
// changed or removed, sorted.
func (p *Pool) Replace(specs []Spec) []string {
	next := make(map[string]Spec, len(specs))
	for _, sp := range specs {
		next[sp.Name] = sp
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	var changed []string
	var stop []*server
	for name, s := range p.servers {
		if sp, ok := next[name]; !ok || !s.spec.Equal(sp) {
			changed = append(changed, name)
			stop = append(stop, s)
			delete(p.servers, name)
		}
	}
	for name, sp := range next {
		if _, ok := p.servers[name]; !ok {
			if !slices.Contains(changed, name) {
				changed = append(changed, name)
			}
			p.servers[name] = &server{p: p, spec: sp, state: StateNotStarted}
		}
	}
	for _, s := range stop {
		p.wg.Go(s.close)
	}
	p.mu.Unlock()
	sort.Strings(changed)
	return changed
}
