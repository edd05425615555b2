package app

import (
	"context"

	"github.com/avaagent/ava/cluster"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/store/postgres"
	"github.com/avaagent/ava/subagent"
)

// clusterNode is the instance's part in a cluster on PostgreSQL; nil
// with the embedded SQLite store or when opened read-only.
type clusterNode struct {
	node *cluster.Node
	role cluster.Role
}

// openCluster joins the cluster when the store is PostgreSQL: subagents
// then run as jobs (package cluster), on this process when its role
// (AVA_ROLE, ava serve --role) runs them, and the hub serves every
// session live whichever process publishes to it (startRelay).
func (in *Instance) openCluster(ctx context.Context, o openOptions) (*clusterNode, error) {
	pg, ok := in.Store.(*postgres.Store)
	if !ok || o.readOnly {
		return nil, nil
	}
	in.startRelay(pg)
	role := cluster.Role(in.Config.Role)
	if role == "" {
		role = config.RoleAll
	}
	n, err := cluster.New(ctx, cluster.Options{Store: pg, Role: role, Workers: in.Config.MaxConcurrentSubagents, Logger: in.Log})
	if err != nil {
		return nil, err
	}
	in.Log.Info("cluster joined", "role", role)
	return &clusterNode{node: n, role: role}, nil
}

// Dispatcher is the manager's Dispatch (nil: embedded).
func (c *clusterNode) Dispatcher() subagent.Dispatcher {
	if c == nil {
		return nil
	}
	return c.node
}

// Runs reports whether this process runs subagents.
func (c *clusterNode) Runs() bool { return c == nil || c.role.Runs() }

// start listens and, on a worker, starts taking jobs.
func (c *clusterNode) start(ctx context.Context, m *subagent.Manager) error {
	if c == nil {
		return nil
	}
	return c.node.Start(ctx, m)
}

// closer is what closes the manager: in a cluster, a drain that stops
// taking jobs first.
func (c *clusterNode) closer(closeManager func() error) func() error {
	if c == nil {
		return closeManager
	}
	return func() error { return c.node.Drain(closeManager) }
}

// StopTaking makes a cluster worker stop taking new subagent runs from
// the job queue (the first step of a shutdown); the runs it has go on.
// It does nothing in other processes.
func (in *Instance) StopTaking() {
	if in.cluster != nil {
		in.cluster.node.StopTaking()
	}
}
