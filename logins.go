package ava

import "github.com/avaagent/ava/store"

// LoginStore keeps the web panel's logins (package store): every process
// sharing the data root, or the cluster's database, finds a login there
// and sees it revoked.
type LoginStore = store.LoginStore

// Login is one browser logged in to the web panel, as stored.
type Login = store.Login

// Logins is the runtime's store of web panel logins, which the daemon's
// authentication (package gateway) creates, checks, renews and revokes.
func (r *Runtime) Logins() LoginStore { return r.in.Store }

// ErrDuplicate means a record's ID or unique key is taken already (a
// login's ID drawn twice, which LoginStore.CreateLogin refuses).
var ErrDuplicate = store.ErrDuplicate
