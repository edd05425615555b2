package ava

import (
	"github.com/avaagent/ava/store"
)

// ChannelStore keeps what a chat channel (Telegram) received, so that a
// restart neither loses an update nor handles one twice, and which
// session each chat talks to (package store).
type ChannelStore = store.ChannelStore

// ChannelUpdate is one update a chat channel received, as stored.
type ChannelUpdate = store.ChannelUpdate

// ChannelUpdates is the runtime's store of chat channels' updates and
// chat sessions: a channel saves an update before it acknowledges it and
// marks it handled once answered.
func (r *Runtime) ChannelUpdates() ChannelStore { return r.in.Store }
