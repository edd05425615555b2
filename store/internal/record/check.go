package record

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

// Checker validates the records a store is given, fills in their
// defaults from its clock and masks them: the checks every write passes
// before its first statement.
type Checker struct {
	// Now is the store's clock, for times left zero.
	Now func() time.Time
	// Mask masks the free text of what is written.
	Mask Masker
}

// OrNow returns t, or the store's clock when t is zero.
func (c Checker) OrNow(t time.Time) time.Time { return OrNow(t, c.Now) }

// NormalizeRunRef canonicalises a run reference: full IDs are lowercase
// hex, short IDs are "S-" and lowercase hex, whatever the user typed.
func NormalizeRunRef(ref string) string {
	ref = strings.TrimSpace(ref)
	if len(ref) >= 2 && (ref[:2] == "S-" || ref[:2] == "s-") {
		return "S-" + strings.ToLower(ref[2:])
	}
	return strings.ToLower(ref)
}

// CheckRun validates a new run and fills in its defaults.
func (c Checker) CheckRun(r *store.Run) error {
	id, err := uuid.Parse(r.ID)
	if err != nil || len(r.ID) != 36 {
		return fmt.Errorf("run ID %q is not a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)", r.ID)
	}
	r.ID = id.String()
	if !store.ValidShortID(r.ShortID) {
		return fmt.Errorf("run short ID %q is not S- and six lowercase hex characters", r.ShortID)
	}
	if err := CheckKey("run session key", r.SessionKey); err != nil {
		return err
	}
	if r.Mode == "" {
		r.Mode = store.ModeSingle
	}
	if !store.ValidMode(r.Mode) {
		return fmt.Errorf("run mode %q is not one of single, parallel, chain", r.Mode)
	}
	if r.Status == "" {
		r.Status = lifecycle.Pending
	}
	if !r.Status.IsActive() {
		return fmt.Errorf("a new run starts queued, pending or running, not %q", r.Status)
	}
	if strings.TrimSpace(r.Role) == "" {
		return errors.New("run role is empty")
	}
	if strings.TrimSpace(r.Task) == "" {
		return errors.New("run task is empty")
	}
	if err := errors.Join(CheckCounters(r.Tokens, r.CostCents, r.Iterations), CheckActive(r.Active)); err != nil {
		return err
	}
	if r.TurnStartedAt == nil {
		r.TurnStartedAt = r.StartedAt
	}
	r.CreatedAt = c.OrNow(r.CreatedAt).UTC()
	return nil
}

// CheckPending validates a new pending spawn and fills in its defaults.
func (c Checker) CheckPending(p *store.PendingSpawn) error {
	if err := errors.Join(CheckKey("pending spawn ID", p.ID), CheckKey("pending spawn session key", p.SessionKey)); err != nil {
		return err
	}
	if p.Status == "" {
		p.Status = store.SpawnPending
	}
	switch p.Status {
	case store.SpawnPending, store.SpawnConfirmed, store.SpawnRejected, store.SpawnExpired:
	default:
		return fmt.Errorf("pending spawn status %q is not one of pending, confirmed, rejected, expired", p.Status)
	}
	if err := errors.Join(
		CheckCount("estimate min seconds", p.EstimateMinSeconds),
		CheckCount("estimate max seconds", p.EstimateMaxSeconds),
		CheckAmount("max cost", p.MaxCostCents),
	); err != nil {
		return err
	}
	if p.EstimateMaxSeconds > 0 && p.EstimateMinSeconds > p.EstimateMaxSeconds {
		return fmt.Errorf("estimate min seconds %d is above max %d", p.EstimateMinSeconds, p.EstimateMaxSeconds)
	}
	p.CreatedAt = c.OrNow(p.CreatedAt).UTC()
	if p.ExpiresAt.IsZero() {
		return errors.New("pending spawn has no expiry time")
	}
	if !p.ExpiresAt.After(p.CreatedAt) {
		return fmt.Errorf("pending spawn expires at %s, not after its creation at %s",
			p.ExpiresAt.Format(time.RFC3339), p.CreatedAt.Format(time.RFC3339))
	}
	if p.Tools == nil {
		p.Tools = []string{}
	}
	return nil
}

// CheckDecision validates DecidePending's arguments.
func CheckDecision(id, decision string) error {
	if err := CheckKey("pending spawn ID", id); err != nil {
		return fmt.Errorf("decide pending spawn: %w", err)
	}
	if decision != store.SpawnConfirmed && decision != store.SpawnRejected {
		return fmt.Errorf("decide pending spawn %s: decision %q is not confirmed or rejected", id, decision)
	}
	return nil
}

// DefaultSender is the display name of a role when the caller gave none.
func DefaultSender(role string) string {
	switch role {
	case store.RoleUser:
		return store.SenderUser
	case store.RoleAssistant:
		return store.SenderAva
	default:
		return store.SenderSubagent
	}
}

// CheckMessage validates m, fills in its defaults and masks its secrets:
// every message stored passes here.
func (c Checker) CheckMessage(m *store.Message) error {
	if err := CheckKey("message session key", m.SessionKey); err != nil {
		return err
	}
	switch m.Role {
	case store.RoleUser, store.RoleAssistant, store.RoleSubagent:
	default:
		return fmt.Errorf("message role %q is not one of user, assistant, subagent", m.Role)
	}
	if m.Sender == "" {
		m.Sender = DefaultSender(m.Role)
	}
	m.CreatedAt = c.OrNow(m.CreatedAt).UTC()
	c.Mask.Message(m)
	return nil
}

// FillAnnouncement checks an announcement message against its run (ID
// runID, parent session parent) and fills in its defaults.
func (c Checker) FillAnnouncement(msg *store.Message, runID, parent string) error {
	switch {
	case msg.SessionKey == "" && parent == "":
		return errors.New("the run has no parent session and the message names none")
	case msg.SessionKey == "":
		msg.SessionKey = parent
	case parent != "" && msg.SessionKey != parent:
		return fmt.Errorf("message session %s is not the run's parent session %s", msg.SessionKey, parent)
	}
	switch {
	case msg.RunID == "":
		msg.RunID = runID
	case NormalizeRunRef(msg.RunID) != runID:
		return fmt.Errorf("message run ID %s is not the run's ID %s", msg.RunID, runID)
	}
	if msg.Role == "" {
		msg.Role = store.RoleSubagent
	}
	return c.CheckMessage(msg)
}

// CheckTransition validates TransitionRun's arguments: the run
// reference, the statuses it may move from, the one it moves to and the
// finish record (only with a final status).
func CheckTransition(ref string, from []lifecycle.Status, to lifecycle.Status, fin *store.RunFinish) error {
	if err := CheckKey("run ID", ref); err != nil {
		return err
	}
	if len(from) == 0 {
		return errors.New("no status to move from")
	}
	for _, f := range from {
		if err := lifecycle.Check(f, to); err != nil {
			return err
		}
	}
	if fin == nil {
		return nil
	}
	if !to.Final() {
		return fmt.Errorf("a finish record needs a final status, not %s", to)
	}
	return errors.Join(CheckCounters(fin.Tokens, fin.CostCents, fin.Iterations), CheckActive(fin.Active),
		CheckCounters(fin.Spend.Tokens, fin.Spend.CostCents, 0))
}

// CheckActive refuses a negative active time.
func CheckActive(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("active time %s is negative", d)
	}
	return nil
}

// WriteFinish stores a finish's messages, msgs, in the run's own session
// key: it touches key once at the latest of now() and the messages' times,
// then inserts each message, touching its session first when it is
// another (once, at its latest message's time). An empty key is the
// run's session unnamed, for a store whose touch finds it from the run's
// row (so that the run's end reads nothing back): every message's
// session is then touched as another's would be, which for the run's
// own changes nothing. touch and insert are the store's statements, in
// its transaction.
func WriteFinish(key string, now func() time.Time, msgs []store.Message,
	touch func(key string, at time.Time) error, insert func(store.Message) error) error {
	if len(msgs) == 0 {
		return nil
	}
	at := now()
	latest := map[string]time.Time{}
	for _, m := range msgs {
		if m.CreatedAt.After(at) {
			at = m.CreatedAt
		}
		if t, ok := latest[m.SessionKey]; !ok || m.CreatedAt.After(t) {
			latest[m.SessionKey] = m.CreatedAt
		}
	}
	if err := touch(key, at); err != nil {
		return err
	}
	touched := map[string]bool{key: key != ""}
	for _, m := range msgs {
		if !touched[m.SessionKey] {
			touched[m.SessionKey] = true
			if err := touch(m.SessionKey, latest[m.SessionKey]); err != nil {
				return err
			}
		}
		if err := insert(m); err != nil {
			return err
		}
	}
	return nil
}

// CheckRunFilter refuses a run filter naming a status that is not one or
// with a negative limit.
func CheckRunFilter(f store.RunFilter) error {
	for _, st := range f.Status {
		if _, err := lifecycle.Parse(string(st)); err != nil {
			return err
		}
	}
	if f.Limit < 0 {
		return fmt.Errorf("limit must be >= 0, got %d", f.Limit)
	}
	return nil
}

// InterruptedError is recorded on the runs a gone owner leaves active
// when they are ended (InterruptOwner, RecoverOwner).
const InterruptedError = "the process stopped while the run was active"

// Takeover says what RecoverOwner does with a gone owner's active run r:
// resume it (t picks it and it was resumed fewer than t.MaxAttempts
// times), or end it interrupted with reason; picked says t picked it, in
// which case reason (store.QuarantinedError) replaces any error the run
// has, where InterruptedError only fills an empty one.
func Takeover(r store.Run, t store.Takeover) (resume, picked bool, reason string) {
	picked = t.Resume != nil && t.Resume(r)
	if picked && r.Attempts < t.MaxAttempts {
		return true, true, ""
	}
	if picked {
		return false, true, store.QuarantinedError
	}
	return false, false, InterruptedError
}

// RunState is what a refused run write reads back to say why.
type RunState struct {
	Short, Status, Owner string
}

// Refused is the error of a fenced run write (TransitionRun with from,
// CheckpointRun with from nil) that changed nothing: the run has the
// wrong status (store.ErrInvalidTransition) or, being active, another
// owner than writer (store.ErrStaleOwner).
func Refused(st RunState, writer string, from []lifecycle.Status) error {
	cur := lifecycle.Status(st.Status)
	if !Fenced(cur, st.Owner, writer) && (from == nil || slices.Contains(from, cur)) {
		return fmt.Errorf("run %s is owned by %s, not %s: %w", st.Short, ownerName(st.Owner), ownerName(writer), store.ErrStaleOwner)
	}
	if from == nil {
		return fmt.Errorf("run %s has ended (%s): %w", st.Short, st.Status, store.ErrInvalidTransition)
	}
	return fmt.Errorf("run %s is %s, not %s: %w", st.Short, st.Status, JoinStatuses(from, " or "), store.ErrInvalidTransition)
}

// ownerName shows an owner ID in an error.
func ownerName(id string) string {
	if id == "" {
		return "no instance"
	}
	return "instance " + id
}

// Fenced reports whether writer may change a run that is status and
// owned by owner: an active run only its owner; a finished one anyone
// (a follow-up). FenceSQL is the same rule as an SQL condition.
func Fenced(status lifecycle.Status, owner, writer string) bool {
	return !slices.Contains(lifecycle.Active, status) || owner == writer
}

// FenceSQL is Fenced as an SQL condition on the runs table, with one
// placeholder (p) for the writer.
func FenceSQL(p string) string {
	return "(status NOT IN " + ActiveStatuses + " OR owner = " + p + ")"
}

// SessionTitle is the default title a stored message gives its untitled
// session: the person's text (store.TitleFrom), "" for any other
// message (a tool result, a [Subagent] note, the assistant's).
func SessionTitle(m store.Message) string {
	if m.Role != store.RoleUser || m.Sender != store.SenderUser {
		return ""
	}
	return store.TitleFrom(m.Text)
}
