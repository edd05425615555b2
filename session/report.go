package session

import (
	"context"
	"time"

	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/orchestrator"
)

// defaultReportAfter is Config.ReportAfter's default.
const defaultReportAfter = 10 * time.Second

// maybeReport starts the report the session owes, if it owes one now:
// no turn of it runs or waits here and none of its subagents runs. The
// store decides whether results wait unreported, and which process makes
// the report (ClaimReport), so that it is made once.
func (s *Service) maybeReport(key string) {
	if s.cfg.Reports == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.reportableLocked(key) {
		return
	}
	s.reporting[key]++
	s.wg.Go(func() {
		s.report(key)
		s.mu.Lock()
		if s.reporting[key]--; s.reporting[key] <= 0 {
			delete(s.reporting, key)
		}
		s.mu.Unlock()
	})
}

// reportableLocked reports whether the session is free for a report:
// no turn runs or waits, and no subagent of it runs (caller holds s.mu).
func (s *Service) reportableLocked(key string) bool {
	if m := s.sessions[key]; m != nil && (m.current != nil || len(m.queue) > 0) {
		return false // the turn's end looks again
	}
	return s.cfg.Subagents == nil || len(s.cfg.Subagents.RunningFor(key)) == 0
}

// report claims the session's report and runs it as a turn of its own.
// A message of the person's that started a turn meanwhile answers the
// results itself: the claim is then dropped.
func (s *Service) report(key string) {
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	through, claimed, err := s.cfg.Reports.ClaimReport(ctx, key)
	cancel()
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Error("claim a session's report of its subagents' results", "session", key, "err", err)
		}
		return
	}
	if !claimed || s.cfg.OnComplete == config.Quiet {
		return // quiet: claimed all the same, so that nothing is owed later
	}
	t := &Turn{Session: key, report: true, done: make(chan struct{}), redactor: s.cfg.Redactor}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.reportableLocked(key) {
		s.log.Info("a turn or a subagent started before the report; it answers the results instead", "session", key)
		return
	}
	m := s.sessions[key]
	if m == nil {
		m = &main{state: Idle}
		s.sessions[key] = m
	}
	s.log.Info("the session's background subagents have ended: reporting their results", "session", key,
		"mode", s.cfg.OnComplete, "through", through)
	s.reports[key] = t
	s.startLocked(key, m, t)
}

// reportOptions are what a report turn of the session runs with: the
// model and limits its last turn here asked for (the configured model
// and no limits of its own when none ran here).
func (s *Service) reportOptions(key string) SendOptions {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastOpts[key]
}

// runReport runs a report turn: a model's synthesis (Summarize) or the
// results as they are (Announce).
func (s *Service) runReport(ctx context.Context, t *Turn) {
	last := s.reportOptions(t.Session)
	orch, model, err := s.cfg.Orchestrator(last.Model, last.Limits)
	if err != nil {
		t.err = err
		t.res = Result{Status: lifecycle.Error, Session: t.Session, Error: err.Error()}
		return
	}
	t.model = model
	offline := s.cfg.Offline != nil && s.cfg.Offline(model)
	if s.cfg.OnComplete == config.Announce {
		res, err := orch.AnnounceResults(ctx, t.Session)
		t.res, t.err = orchestrator.JSON(res, t.Session, model, offline), err
		return
	}
	res, _, err := orch.AskMessage(ctx, t.Session, "", orchestrator.Message{Report: true})
	t.res, t.err = orchestrator.JSON(res, t.Session, model, offline), err
}

// ReportOwed reports, for every session owed a report whose results
// have waited longer than Config.ReportAfter (its process stopped before it could
// report, or the results ended where no session service runs), the
// results now, when the session is free. A daemon calls it at start and
// with its recovery sweeps.
func (s *Service) ReportOwed(ctx context.Context) error {
	if s.cfg.Reports == nil {
		return nil
	}
	keys, err := s.cfg.Reports.UnreportedSessions(ctx, time.Now().Add(-s.cfg.ReportAfter))
	if err != nil {
		return err
	}
	for _, key := range keys {
		s.maybeReport(key)
	}
	return nil
}

// SweepReports calls ReportOwed at once and then every every, until
// Close: a daemon's part in making every owed report once, also for a
// process that stopped before it could.
func (s *Service) SweepReports(every time.Duration) {
	if every <= 0 {
		every = 10 * time.Second
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
			if err := s.ReportOwed(ctx); err != nil && s.ctx.Err() == nil {
				s.log.Error("look for sessions owed a report of their subagents' results", "err", err)
			}
			cancel()
			select {
			case <-s.ctx.Done():
				return
			case <-t.C:
			}
		}
	})
}

// WaitReport waits until the session has nothing left running here (no
// turn, no subagent of it, no report being claimed) and returns the
// report turn this process ran for it since the last WaitReport, if one
// ran: `ava run` prints it before it exits. ok is false when none ran
// (on_complete quiet, nothing in the background, or another process
// made it).
func (s *Service) WaitReport(ctx context.Context, key string) (res Result, ok bool, err error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		m := s.sessions[key]
		busy := m != nil && (m.current != nil || len(m.queue) > 0) || s.reporting[key] > 0 ||
			s.cfg.Subagents != nil && len(s.cfg.Subagents.RunningFor(key)) > 0
		t := s.reports[key]
		if !busy {
			delete(s.reports, key)
		}
		s.mu.Unlock()
		if !busy {
			if t == nil {
				return Result{}, false, nil
			}
			res, err := t.Wait(ctx)
			return res, true, err
		}
		select {
		case <-ctx.Done():
			return Result{}, false, ctx.Err()
		case <-tick.C:
		}
	}
}
