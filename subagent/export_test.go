package subagent

// HeldHandles reports how many handles m holds: strongly (active runs)
// and in its weak index of finished runs still referenced somewhere.
func HeldHandles(m *Manager) (active, idle int) { return m.heldHandles() }

// StoredStatus is the status of a run as the store records it, as of
// now: what a surface shows of a run no process holds.
var StoredStatus = statusOfRun
