package subagent

// HeldHandles reports how many handles m holds: strongly (active runs)
// and in its weak index of finished runs still referenced somewhere.
func HeldHandles(m *Manager) (active, idle int) { return m.heldHandles() }
