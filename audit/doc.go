// Package audit writes and reads Ava's durable logs under $AVA_DATA_ROOT:
//
//	logs/ava/YYYY-MM-DD.jsonl       daily audit log of every agent (UTC date of the event)
//	logs/subagents/S-xxxxxx.jsonl   full trace of one subagent (also in the daily log)
//	sessions/<session>.jsonl        lifecycle entries (agent_event) of one session
//	sessions/outputs/<jobId>.txt    large outputs referenced by a lifecycle entry
//
// Directories are created 0700 and files 0600.
//
// # Writing
//
// A [Writer] is an [event.Sink]. It keeps only audit events
// ([event.Type.IsAudit]); each becomes one line, the JSON form of
// [event.Event], masked by the writer's [redact.Redactor] when it has one
// (Ava's event hub masks every event before its sinks see it).
// Delivery rules:
//   - One goroutine owns every open file, so two entries never share a
//     line however many goroutines deliver at once.
//   - Entries are queued (bounded) and written in batches: one write
//     system call per file per batch. When the queue is full, Deliver
//     blocks (back-pressure); it never drops an entry.
//   - Written data is fsynced at most Options.SyncInterval later (200ms by
//     default). [Writer.DeliverSync] and [Writer.Sync] return only after
//     an fsync, for entries that must survive a crash. A new file's
//     directory is synced with the next sync, once per directory; when
//     many files are dirty (a burst of subagents, one trace each) one
//     syncfs(2) replaces their fsyncs. Every file is expected on the data
//     root's file system.
//   - A write or fsync error is logged at Error and returned by that and
//     every later Deliver, DeliverSync, Sync and Close call until a later
//     batch has been written and fsynced without error. Entries of a
//     failed batch that did not reach the file are lost (and reported so).
//     When a failure left part of a line in a file, the next write to it
//     starts on a new line, so the torn fragment is a single line that
//     readers skip and report; what was already there is never rewritten.
//   - The daily file follows the event's UTC date; files of past days are
//     closed at the next sync tick after UTC midnight.
//
// [SessionLogs] appends lifecycle entries ([LifecycleEntry], the
// agent_event entries of DESIGN.md) synchronously: Append returns after
// the line is fsynced. Concurrent appends to one session file are group
// committed: one of them writes all queued lines with one write and one
// fsync and then releases the others, so each still returns only once
// its own line is durable. Only lifecycle events go there, never progress.
//
// # Reading
//
// Every reader ([Scan], [ScanEntries], [Reader.Query], [Reader.Follow],
// [ScanLifecycle]) uses one line scanner, which streams a file in
// constant memory (lines up to [MaxLineSize]) and skips lines it cannot
// use — a torn last line left by a crash, a corrupt or over-long line —
// reporting each skip as a [Skip] (file, 1-based line number, reason)
// instead of failing: Scan and Query return them (at most 1000 listed,
// then one counting the rest), ScanEntries and ScanLifecycle pass each to
// an onSkip callback as they meet it, and Follow to ReaderOptions.OnSkip.
// A last line without its newline is accepted only if it parses; while
// following, it is not read until its newline arrives. A [Reader] answers [Query] values (which read only the files
// that can hold matching entries: a subagent's trace, or the daily files
// of the time range) and follows the logs as they grow ([Reader.Follow]).
//
// Given an [EventSource] (ReaderOptions.Events: the events table of a
// PostgreSQL store shared by a cluster), a Reader reads the stored events
// of every process instead of the data root's files, with the same
// queries, the same matching and the same entries (a stored line is the
// line the Writer writes); Follow then polls the store by a cursor that
// only moves past events stored for good.
package audit
