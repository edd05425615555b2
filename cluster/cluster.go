// Package cluster runs Ava's subagents as jobs in PostgreSQL with River,
// so that any number of processes on any number of machines share the
// work: gateways (ava serve --role gateway) accept chats and dispatch
// each new run as a job in the same transaction that records it, and
// workers (ava worker, or --role worker) claim the jobs and run them with
// the embedded runtime's code (subagent.Manager.Execute). Cancellation
// and steering reach the worker that runs a subagent through
// LISTEN/NOTIFY, and each run's end reaches the process that waits for
// it the same way.
//
// The concurrency limit (AVA_MAX_CONCURRENT_SUBAGENTS) holds for the
// whole cluster: a claim counts the runs active in the database under an
// advisory lock, and a job that finds the cluster full waits on its
// worker until a run ends somewhere (or a second), then claims again. A worker that dies
// leaves its runs to the others' recovery (package instance's leases):
// resumable runs continue from their last checkpoint on another worker.
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/postgres"
	"github.com/avaagent/ava/subagent"
)

// Role is what a process of the cluster does: config.RoleAll (the
// default), config.RoleGateway or config.RoleWorker.
type Role string

// Runs reports whether the role runs subagents.
func (r Role) Runs() bool { return r != config.RoleGateway }

// Queue is the River queue of subagent runs.
const Queue = "ava_subagents"

// fullWait is the longest a job that found the cluster full waits
// before it tries to claim again (a run's end, anywhere, wakes one
// waiting job per worker sooner).
const fullWait = time.Second

// A job only claims its run and starts it (the run then belongs to the
// worker's instance, whose lease recovery covers): jobTimeout bounds
// the wait for room in a full cluster, after which the job goes back to
// the queue; a job whose worker died before it claimed is rescued by
// River rescueAfter later and run again.
const (
	jobTimeout  = 5 * time.Second
	rescueAfter = 15 * time.Second
)

// syncEvery is how often the ends of runs elsewhere are looked for in
// the store besides their notices.
const syncEvery = 10 * time.Second

// migrateLock is the advisory lock key that makes replicas starting
// together migrate River's tables once.
const migrateLock = 0x61766172 // "avar"

// RunArgs are a subagent run job's arguments: the run's ID (its record
// holds everything else).
type RunArgs struct {
	RunID string `json:"run_id"`
}

// Kind implements river.JobArgs.
func (RunArgs) Kind() string { return "ava_subagent_run" }

// Options configure a Node.
type Options struct {
	Store *postgres.Store
	Role  Role
	// Workers is how many runs this worker takes at once (its share of
	// the cluster's limit; default 3).
	Workers int
	Logger  *slog.Logger
}

// Node is one process's part in the cluster: its dispatcher (for
// spawns), and for workers the River client running jobs. It implements
// subagent.Dispatcher.
type Node struct {
	opt    Options
	log    *slog.Logger
	client *river.Client[pgx.Tx]

	mu      sync.Mutex
	manager *subagent.Manager
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started bool

	// room wakes one job waiting for room in the cluster whenever a run
	// ends anywhere (ChannelRuns): one claim per freed slot and worker,
	// not a stampede.
	room chan struct{}

	stopOnce sync.Once
	stopped  chan struct{} // closed when River has stopped
	stopErr  error
}

var _ subagent.Dispatcher = (*Node)(nil)

// New migrates River's tables (once across replicas) and returns a node;
// Start it with the manager once the manager exists.
func New(ctx context.Context, opt Options) (*Node, error) {
	if opt.Workers <= 0 {
		opt.Workers = 3
	}
	n := &Node{opt: opt, log: opt.Logger, stopped: make(chan struct{}), room: make(chan struct{})}
	if n.log == nil {
		n.log = slog.Default()
	}
	n.log = n.log.With("component", "cluster")
	if err := migrate(ctx, opt.Store); err != nil {
		return nil, err
	}
	// FetchCooldown also spaces the insert notifications a gateway sends
	// (River's default, 100 ms, leaves a spawn that follows another
	// within it to the workers' next poll); workers poll every 200 ms
	// in case a notification is lost.
	cfg := &river.Config{Logger: n.log.With("component", "river"), JobTimeout: jobTimeout, RescueStuckJobsAfter: rescueAfter,
		FetchCooldown: 5 * time.Millisecond, FetchPollInterval: 200 * time.Millisecond}
	if opt.Role.Runs() {
		workers := river.NewWorkers()
		river.AddWorker(workers, &runWorker{n: n})
		cfg.Workers = workers
		cfg.Queues = map[string]river.QueueConfig{Queue: {MaxWorkers: opt.Workers}}
	}
	client, err := river.NewClient(riverpgxv5.New(opt.Store.Pool()), cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: job queue client: %w", err)
	}
	n.client = client
	return n, nil
}

// migrate brings River's tables up to date under an advisory lock.
func migrate(ctx context.Context, s *postgres.Store) error {
	conn, err := s.Pool().Acquire(ctx)
	if err != nil {
		return fmt.Errorf("cluster: migrate the job queue: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrateLock); err != nil {
		return fmt.Errorf("cluster: migrate the job queue: lock: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrateLock) }()
	m, err := rivermigrate.New(riverpgxv5.New(s.Pool()), nil)
	if err != nil {
		return fmt.Errorf("cluster: migrate the job queue: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("cluster: migrate the job queue: %w", err)
	}
	return nil
}

// Dispatch implements subagent.Dispatcher: the run and its job commit in
// one transaction.
func (n *Node) Dispatch(ctx context.Context, run store.Run, msgs []store.Message) error {
	return n.opt.Store.EnqueueRun(ctx, run, msgs, n.insertJob(run.ID))
}

// insertJob inserts the job of a run in a transaction of the store.
func (n *Node) insertJob(runID string) func(ctx context.Context, tx pgx.Tx) error {
	return func(ctx context.Context, tx pgx.Tx) error {
		_, err := n.client.InsertTx(ctx, tx, RunArgs{RunID: runID}, &river.InsertOpts{Queue: Queue, MaxAttempts: 25})
		if err != nil {
			return fmt.Errorf("insert job: %w", err)
		}
		return nil
	}
}

// Requeue implements subagent.Dispatcher: the follow-up and its job
// commit in one transaction.
func (n *Node) Requeue(ctx context.Context, runID string, from lifecycle.Status, msgs []store.Message) error {
	return n.opt.Store.RequeueRun(ctx, runID, from, msgs, n.insertJob(runID))
}

// Claim implements subagent.Dispatcher.
func (n *Node) Claim(ctx context.Context, runID, owner string, limit int) (store.Run, error) {
	r, err := n.opt.Store.ClaimRun(ctx, runID, owner, limit)
	if errors.Is(err, postgres.ErrClusterFull) {
		return r, fmt.Errorf("%w: %w", subagent.ErrLimit, err)
	}
	return r, err
}

// Unclaim implements subagent.Dispatcher.
func (n *Node) Unclaim(ctx context.Context, runID, owner string) error {
	return n.opt.Store.UnclaimRun(ctx, runID, owner)
}

// Control implements subagent.Dispatcher: every process hears it, the
// one running the run acts on it.
func (n *Node) Control(ctx context.Context, c subagent.Control) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("control %s: %w", c.Run, err)
	}
	return n.opt.Store.Notify(ctx, postgres.ChannelControl, string(b))
}

// Start listens for runs' ends and control requests, and on a worker
// starts taking jobs. m is the process's manager, made with this node as
// its Dispatch.
func (n *Node) Start(ctx context.Context, m *subagent.Manager) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.started {
		return errors.New("cluster: node already started")
	}
	n.started, n.manager = true, m
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.cancel = cancel
	ready := make(chan struct{})
	var once sync.Once
	n.wg.Go(func() { n.listen(lctx, func() { once.Do(func() { close(ready) }) }) })
	select {
	case <-ready:
	case <-ctx.Done():
		return fmt.Errorf("cluster: listen for notifications: %w", ctx.Err())
	}
	if n.opt.Role.Runs() {
		if err := n.client.Start(lctx); err != nil {
			return fmt.Errorf("cluster: start taking jobs: %w", err)
		}
	}
	return nil
}

// listen hands the cluster's notifications to the manager until ctx
// ends. Runs' ends are read from the store off the listening connection.
func (n *Node) listen(ctx context.Context, ready func()) {
	ended := make(chan string, 1024)
	n.wg.Go(func() {
		// A periodic look at the store completes the views whose end
		// could not be read when its notice came.
		sync := time.NewTicker(syncEvery)
		defer sync.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case id := <-ended:
				n.manager.RemoteEnded(ctx, id)
			case <-sync.C:
				n.manager.SyncRemote(ctx)
			}
		}
	})
	recovering := make(chan struct{}, 1)
	if n.opt.Role.Runs() {
		n.wg.Go(func() { n.recoverOnNotice(ctx, recovering) })
	}
	channels := []string{postgres.ChannelRuns, postgres.ChannelControl, postgres.ChannelInstances}
	_ = n.opt.Store.Listen(ctx, channels, func() {
		ready()
		n.wg.Go(func() { n.manager.SyncRemote(ctx) })
	}, func(channel, payload string) {
		switch channel {
		case postgres.ChannelRuns:
			n.wakeWaiting()
			select {
			case ended <- payload:
			default:
				n.wg.Go(func() { n.manager.RemoteEnded(ctx, payload) })
			}
		case postgres.ChannelControl:
			var c subagent.Control
			if err := json.Unmarshal([]byte(payload), &c); err != nil {
				n.log.Warn("unreadable control request", "err", err)
				return
			}
			n.manager.HandleControl(c)
		case postgres.ChannelInstances:
			select {
			case recovering <- struct{}{}:
			default:
			}
		}
	})
}

// recoverOnNotice runs the manager's recovery when a process leaves the
// cluster (its instance removed at a drain), so that its runs are taken
// over at once rather than at the next periodic sweep.
func (n *Node) recoverOnNotice(ctx context.Context, notices <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-notices:
			if err := n.manager.Recover(ctx); err != nil && ctx.Err() == nil {
				n.log.Error("recover the runs of a process that left", "err", err)
			}
		}
	}
}

// StopTaking makes a worker stop taking jobs (the first step of a
// drain); the jobs it runs go on. River's Stop returns once they have
// returned, which Drain waits for.
func (n *Node) StopTaking() {
	n.stopOnce.Do(func() {
		n.mu.Lock()
		running := n.started && n.opt.Role.Runs()
		n.mu.Unlock()
		if !running {
			close(n.stopped)
			return
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), drainWait)
			defer cancel()
			n.stopErr = n.client.Stop(ctx)
			close(n.stopped)
		}()
	})
}

// drainWait bounds how long a drain waits for the jobs to return once
// the manager has stopped their runs.
const drainWait = 2 * time.Minute

// Drain stops taking jobs, then closes the manager (its resumable runs
// are checkpointed and left for other workers, which take them over as
// soon as this process's instance is removed), waits for the jobs to
// return, and stops listening.
func (n *Node) Drain(closeManager func() error) error {
	n.StopTaking()
	err := closeManager()
	<-n.stopped
	if n.cancel != nil {
		n.cancel()
	}
	n.wg.Wait()
	return errors.Join(err, n.stopErr)
}

// runWorker runs subagent run jobs.
type runWorker struct {
	river.WorkerDefaults[RunArgs]
	n *Node
}

// Work claims the job's run and starts it on this worker's manager,
// then ends: the run goes on under the worker's instance. When the
// cluster is full it waits until a run ends somewhere and tries again,
// until the job's timeout gives it back to the queue; a run that no
// longer waits (claimed elsewhere, cancelled) ends the job at once.
func (w *runWorker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	w.n.mu.Lock()
	m := w.n.manager
	w.n.mu.Unlock()
	for {
		err := m.Execute(ctx, job.Args.RunID)
		switch {
		case errors.Is(err, subagent.ErrLimit):
			select {
			case <-w.n.room:
			case <-time.After(fullWait):
			case <-ctx.Done():
				return river.JobSnooze(0)
			}
			continue
		case errors.Is(err, subagent.ErrClosed):
			return river.JobSnooze(0)
		}
		return err
	}
}

// wakeWaiting wakes one job waiting for room, if any: a run has ended.
func (n *Node) wakeWaiting() {
	select {
	case n.room <- struct{}{}:
	default:
	}
}
