// chat.js: one session as a chat — Ava's main session or a subagent's —
// built from the session's event stream, with a composer that sends,
// queues and stops.
import { h } from 'preact';
import { useEffect, useMemo, useReducer, useRef, useState } from 'preact/hooks';
import htm from 'htm';
import { answerQuestion, confirmSpawn, follow, getJSON, sendMessage, stopSession, HTTPError } from './api.js';
import { cents, cost, duration, seconds, shortJSON, statusLabel, totalCost } from './format.js';
import { markdown } from './markdown.js';
import { AttachmentStrip, MessageAttachments, dropTarget, pasteFiles, splitAttachments, useAttachments } from './attachments.js';

const html = htm.bind(h);

/** The state of a chat before its first event. */
export const empty = {
  items: [], // what is shown, one per kept event worth showing, in order
  draft: null, // the answer streaming now (TextDelta), until its AssistantMessage
  thinking: '', // thinking streaming now (ThinkingDelta)
  model: '',
  offline: false,
  running: false, // a run started and has not ended
  state: '', // a main session's state: idle, running, waiting_for_subagents
  activity: '',
  stalled: false,
  tokens: 0,
  cached: 0, // of tokens, those read from the provider's prompt cache
  cost: 0,
  unpriced: false, // a CostUpdate said the model has no known price
  spent: 0, // counts turn and subagent ends: the spend roll-up is read again
  conn: 'connecting',
  task: false, // a subagent's stream: its first UserMessage is the task Ava gave it
  awaiting: [], // proposals awaiting the person: {id, role, task, estimate, expiresAt}
  decided: [], // IDs of proposals decided, so a late pending list cannot bring them back
};

/** The state of a new chat: nothing to follow yet, so no connection. */
const fresh = { ...empty, conn: '' };

// isStopError is the Error a subagent's stream carries when someone
// stopped it (agent.ErrCancelled: "cancelled: cancelled"); the end line
// that follows says "stopped", so it is not shown as an error.
const isStopError = (c) => c.fatal && (c.error === 'cancelled' || c.error === 'cancelled: cancelled');

const add = (s, item) => ({ ...s, items: [...s.items, item] });

/** Folds one event (or a connection change) into a chat's state. */
export function reduce(s, ev) {
  const c = ev.content || {};
  const seq = ev.seq;
  switch (ev.eventType) {
    case 'UserMessage': // in a subagent's own stream the first is its task, from Ava
      return add(s, { kind: s.task && !s.items.some((it) => it.kind === 'task') ? 'task' : 'user', seq, text: c.text });
    case 'TextDelta':
      return { ...s, draft: (s.draft ?? '') + c.text, stalled: false };
    case 'ThinkingDelta':
      return { ...s, thinking: s.thinking + c.text, stalled: false };
    case 'Retry':
      return { ...s, draft: null, thinking: '' };
    case 'ExtendedThinking':
      return add({ ...s, thinking: '' }, { kind: 'thinking', seq, text: c.thinking });
    case 'AssistantMessage':
      return add({ ...s, draft: null, thinking: '' }, { kind: 'assistant', seq, text: c.text });
    case 'ToolCall':
      return add(s, { kind: 'tool', seq, id: c.id, name: c.name, args: c.args });
    case 'ToolResult':
      return {
        ...s,
        items: s.items.map((it) => (it.kind === 'tool' && it.id === c.id ? { ...it, result: c } : it)),
      };
    case 'SubagentSpawn':
      return add(s, { kind: 'spawn', seq, id: c.subagentId, role: c.role, task: c.task });
    case 'SubagentProgress': // "⏳ still working": one line per subagent, updated in place
      return {
        ...s,
        items: [...s.items.filter((it) => !(it.kind === 'progress' && it.id === c.subagentId)),
          { kind: 'progress', seq, id: c.subagentId, role: c.role, activity: c.activity, elapsedMs: c.elapsedMs, tokens: c.tokens, stalled: !!c.stalled }],
      };
    case 'SubagentComplete':
      return add({ ...s, spent: s.spent + 1, items: s.items.filter((it) => !(it.kind === 'progress' && it.id === c.subagentId)) },
        { kind: 'complete', seq, ...c, id: c.subagentId });
    case 'SpawnProposed':
      return add(await_(s, [{ id: c.pendingId, kind: c.kind || 'spawn', role: c.role, task: c.task, estimate: c.estimate, expiresAt: c.expiresAt }]),
        { kind: 'proposal', seq, id: c.pendingId, what: c.kind || 'spawn', role: c.role, task: c.task, estimate: c.estimate, text: c.text, decision: '' });
    case 'pendingList': // GET /api/spawns?status=pending: the daemon's list
      return await_(s, ev.proposals.map((p) => ({ id: p.id, kind: p.kind || 'spawn', role: p.role, task: p.task, estimate: p.estimate, expiresAt: p.expiresAt })));
    case 'SpawnDecided':
      return {
        ...s,
        awaiting: s.awaiting.filter((p) => p.id !== c.pendingId),
        decided: [...s.decided, c.pendingId],
        items: s.items.map((it) => (it.kind === 'proposal' && it.id === c.pendingId
          ? { ...it, decision: c.decision, change: c.change, ids: c.subagentIds || [] } : it)),
      };
    case 'FindingPosted': // a group member shared a finding on its board
      return add(s, { kind: 'finding', seq, id: c.findingId, text: c.text });
    case 'UserQuestion':
      return add(s, { kind: 'question', seq, id: c.questionId, subagentId: c.subagentId, role: c.role, text: c.question, by: '', answer: '' });
    case 'QuestionAnswered':
      return {
        ...s,
        items: s.items.map((it) => (it.kind === 'question' && it.id === c.questionId ? { ...it, by: c.by, answer: c.answer || '' } : it)),
      };
    case 'Error':
      if (isStopError(c)) return s;
      return add(s, { kind: 'error', seq, text: c.error, fatal: c.fatal });
    case 'SessionStart':
      return { ...s, running: true, model: c.model || s.model, offline: s.offline || !!c.offline };
    case 'SessionEnd': {
      const ended = { ...s, running: false, draft: null, thinking: '', activity: '', stalled: false, spent: s.spent + 1 };
      return c.status && c.status !== 'success' ? add(ended, { kind: 'end', seq, status: c.status }) : ended;
    }
    case 'SessionState':
      return { ...s, state: c.state };
    case 'CostUpdate':
      return {
        ...s,
        tokens: s.tokens + (c.inputTokens || 0) + (c.outputTokens || 0) + (c.cacheReadTokens || 0) + (c.cacheWriteTokens || 0),
        cached: s.cached + (c.cacheReadTokens || 0),
        cost: s.cost + (c.costCents || 0),
        unpriced: s.unpriced || !!c.unpriced,
      };
    case 'Activity':
      return { ...s, activity: c.text };
    case 'Stalled':
      return { ...s, stalled: true };
    case 'conn': // the stream's connection changed; a gap's deltas are gone
      return ev.conn === 'reconnecting' ? { ...s, conn: ev.conn, draft: null, thinking: '' } : { ...s, conn: ev.conn };
    default:
      return s;
  }
}

// await_ adds proposals to those awaiting the person, each once, unless
// already decided.
function await_(s, proposals) {
  const fresh = proposals.filter((p) => !s.decided.includes(p.id) && !s.awaiting.some((a) => a.id === p.id));
  return fresh.length ? { ...s, awaiting: [...s.awaiting, ...fresh] } : s;
}

/**
 * A session as a chat: its whole stream from the start, live. props:
 * sessionKey (empty for a chat not started yet), title, subagent (the
 * list's record when this is a subagent), onStarted(key) when the first
 * message makes a new session, onOpen(id) to open a subagent, onModel.
 */
export function Chat({ sessionKey, title, subagent, onStarted, onOpen, onBack }) {
  const [s, dispatch] = useReducer(reduce, sessionKey ? { ...empty, task: !!subagent } : fresh);
  // Messages sent and not yet in the stream, shown dimmed until their
  // UserMessage arrives (at once, or when a queued one is delivered).
  const [pending, setPending] = useState([]);
  useEffect(() => {
    if (!sessionKey) return undefined;
    return follow(sessionKey, {
      onEvent: (ev) => {
        if (ev.eventType === 'UserMessage') setPending((p) => arrived(p, ev.content?.text || ''));
        dispatch(ev);
      },
      onStatus: (st) => dispatch({ eventType: 'conn', conn: st.error ? `error: ${st.error}` : st }),
    });
  }, [sessionKey]);

  usePendingList(subagent ? '' : sessionKey, dispatch);
  const running = subagent?.status ? !isFinal(subagent.status) : s.state ? s.state !== 'idle' : s.running;
  const spend = useSpend(subagent ? '' : sessionKey, s.spent);
  const send = async (text, how) => {
    const mine = { text, queued: false };
    setPending((p) => [...p, mine]);
    try {
      const res = await sendMessage(sessionKey || undefined, text, how);
      if (res.queued) setPending((p) => p.map((m) => (m === mine ? { ...m, queued: true } : m)));
      if (!sessionKey) onStarted(res.sessionKey);
    } catch (err) {
      setPending((p) => p.filter((m) => m !== mine));
      throw err;
    }
  };
  return html`
    <section class="chat" data-session=${sessionKey} data-conn=${s.conn}>
      <${ChatHeader} ...${{ title, s, subagent, sessionKey, running, onBack, spend }} />
      <${Messages} s=${s} pending=${pending} onOpen=${onOpen} typing=${typing(s, subagent, running)} sessionKey=${sessionKey} />
      ${!subagent && html`<${PendingBar} awaiting=${s.awaiting} />`}
      <${Composer} send=${send} canSteer=${!!subagent} placeholder=${subagent ? `Message ${subagent.role} ${subagent.id}` : 'Message Ava'} />
    </section>`;
}

/**
 * Reads the session's pending proposals once it is opened (a reload, or
 * a stream whose older events are gone) into the chat's state; the
 * stream's SpawnProposed and SpawnDecided events keep it current.
 */
function usePendingList(sessionKey, dispatch) {
  useEffect(() => {
    if (!sessionKey) return;
    getJSON(`/api/spawns?status=pending&sessionKey=${encodeURIComponent(sessionKey)}`)
      .then((b) => dispatch({ eventType: 'pendingList', proposals: b.proposals || [] }), () => {});
  }, [sessionKey]);
}

/**
 * The session's proposals awaiting the person, kept above the input so
 * they stay in sight when their cards scroll off: role, task, estimate
 * and Yes / No each (a long command: the tool, the command and how long
 * it will likely run). Typing "yes" or "no" answers them all, "yes to
 * P-…" one.
 */
function PendingBar({ awaiting }) {
  const now = Date.now();
  const live = awaiting.filter((p) => !p.expiresAt || Date.parse(p.expiresAt) > now);
  if (live.length === 0) return null;
  const what = live.every((p) => p.kind === 'process') ? ['A command', 'commands'] : live.every((p) => p.kind !== 'process') ? ['A spawn', 'spawns'] : ['A proposal', 'proposals'];
  return html`
    <div class="pending-bar" role="region" aria-label="Proposals awaiting your answer">
      <small class="muted">${live.length === 1 ? `${what[0]} awaits your answer` : `${live.length} ${what[1]} await your answer — "yes" answers all`}</small>
      ${live.map((p) => html`<${PendingSpawn} key=${p.id} p=${p} />`)}
    </div>`;
}

// PendingSpawn is one line of the pending bar.
function PendingSpawn({ p }) {
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const decide = async (d) => {
    setError('');
    setBusy(true);
    try {
      await confirmSpawn(p.id, d);
    } catch (err) {
      setError(err.message);
    } finally {
      setBusy(false);
    }
  };
  const est = p.estimate || {};
  const bound = [est.maxCostCents > 0 && `≤ ${cents(est.maxCostCents)}`, est.maxSeconds > 0 && `≤ ${duration(est.maxSeconds * 1000)}`].filter(Boolean).join(' · ');
  const what = p.kind === 'process'
    ? html`<${ProcessLine} p=${p} /> <span class="muted">${p.id}</span>`
    : html`<b>${p.role}</b> <span class="muted">${p.id}</span> — ${p.task}${bound && html`<small class="muted"> (${bound})</small>`}`;
  return html`
    <div class="pending-spawn" data-id=${p.id} data-proposal-kind=${p.kind}>
      <span class="what">${what}</span>
      <button type="button" class="yes" disabled=${busy} onClick=${() => decide('yes')}>Yes</button>
      <button type="button" class="ghost no" disabled=${busy} onClick=${() => decide('no')}>No</button>
      ${error && html`<span class="error" role="alert">${error}</span>`}
    </div>`;
}

/**
 * The session's spend rolled up (own turns, all subagents, total, per
 * model), read again whenever a turn or a subagent ends (tick).
 */
function useSpend(sessionKey, tick) {
  const [spend, setSpend] = useState(null);
  useEffect(() => {
    if (!sessionKey) return;
    getJSON(`/api/sessions/${encodeURIComponent(sessionKey)}`).then((b) => setSpend(b.spend), () => {});
  }, [sessionKey, tick]);
  return spend;
}

// typing is the typing indicator's text: Ava answers, its subagents
// work (seed 004's waiting_for_subagents), or a subagent works; '' when
// nothing runs.
function typing(s, subagent, running) {
  if (subagent) return running && subagent.status === 'running' ? `${subagent.role} is working` : '';
  if (s.state === 'running' || (!s.state && s.running)) return 'Ava is typing';
  if (s.state === 'waiting_for_subagents') return 'Waiting for subagents';
  return '';
}

// arrived drops the pending message a UserMessage of text delivers (the
// daemon may wrap it, so the first one the text contains).
function arrived(pending, text) {
  const i = pending.findIndex((m) => text.includes(m.text));
  return i < 0 ? pending : [...pending.slice(0, i), ...pending.slice(i + 1)];
}

// endMark is a completion line's mark: ✓ success, ■ stopped, ✗ otherwise.
function endMark(status) {
  if (status === 'success') return '✓';
  return status === 'cancelled' ? '■' : '✗';
}

function isFinal(status) {
  return !['queued', 'pending', 'running', ''].includes(status || '');
}

function ChatHeader({ title, s, subagent, sessionKey, running, onBack, spend }) {
  const [stopping, setStopping] = useState(false);
  const stop = async () => {
    setStopping(true);
    try {
      await stopSession(sessionKey);
    } finally {
      setStopping(false);
    }
  };
  const conn = s.conn === 'live' ? '' : s.conn;
  // A subagent's figures are the list's (the one read model, over all
  // its turns), as ava ps and ava status show them; the stream's sum is
  // for a session that has no record.
  const used = subagent ? { tokens: subagent.tokens, cost: subagent.costCents } : { tokens: s.tokens, cost: s.cost };
  const spent = cost(used.cost, used.tokens, s.unpriced);
  return html`
    <header class="chat-head">
      ${onBack && html`<button class="back" onClick=${onBack} title="Back to Ava">←</button>`}
      <div class="chat-title">
        <strong>${title}</strong>
        ${subagent && html`<span class=${`pill st-${subagent.status}`}>${statusLabel(subagent.status)}</span>`}
        <small class="muted">
          ${[s.model || subagent?.model, !spend && used.tokens > 0 && `${used.tokens} tokens · ${spent}`, s.cached > 0 && `${s.cached} cached`].filter(Boolean).join(' · ')}
          ${(s.offline || (s.model || subagent?.model || '').startsWith('scripted/')) && html` <span class="pill offline">offline</span>`}
        </small>
        ${spend && spend.total.tokens > 0 && html`<small class="muted spend" title=${(spend.byModel || []).map((m) => `${m.model}: ${cost(m.costCents, m.tokens)}, ${m.tokens} tokens`).join('\n')}>
          own ${cost(spend.own.costCents, spend.own.tokens, s.unpriced)} · subagents ${cost(spend.subagents.costCents, spend.subagents.tokens)} · total ${totalCost(spend.total, spend.byModel)} (${spend.total.tokens} tokens${spend.total.cachedTokens > 0 ? `, ${spend.total.cachedTokens} cached` : ''})</small>`}
      </div>
      ${conn && html`<span class="conn" role="status">${conn === 'reconnecting' ? 'reconnecting…' : conn}</span>`}
      ${sessionKey && running && html`<button class="stop" onClick=${stop} disabled=${stopping}>Stop</button>`}
    </header>`;
}

function Messages({ s, pending, onOpen, typing, sessionKey }) {
  const ref = useRef(null);
  const stick = useRef(true); // follow the bottom unless the person scrolled up
  const onScroll = () => {
    const el = ref.current;
    stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  };
  useEffect(() => {
    if (stick.current && ref.current) ref.current.scrollTop = ref.current.scrollHeight;
  });
  const live = s.activity || (s.stalled && 'stalled: no output for a while');
  return html`
    <div class="messages" ref=${ref} onScroll=${onScroll}>
      ${s.items.length === 0 && !s.draft && pending.length === 0 && html`<p class="muted hint">Nothing here yet.</p>`}
      ${s.items.map((it) => html`<${Item} key=${it.seq} it=${it} onOpen=${onOpen} sessionKey=${sessionKey} />`)}
      ${s.thinking && html`<details class="thinking live"><summary>Thinking…</summary><pre>${s.thinking}</pre></details>`}
      ${s.draft != null && html`<${Draft} text=${s.draft} />`}
      ${pending.map((p) => html`<div class="msg user pending">${p.text}<small>${p.queued ? 'queued' : 'sending…'}</small></div>`)}
      ${live && html`<p class=${`activity${s.stalled ? ' stalled' : ''}`}>${live}</p>`}
      ${typing && html`<p class="typing" role="status" aria-live="polite">${typing}<span class="dots" aria-hidden="true"><i /><i /><i /></span></p>`}
    </div>`;
}

function Item({ it, onOpen, sessionKey }) {
  const seq = it.seq;
  switch (it.kind) {
    case 'user': {
      const m = splitAttachments(it.text);
      return html`<div class="msg user" data-seq=${seq} data-kind="user">${m.text}<${MessageAttachments} items=${m.attachments} /></div>`;
    }
    case 'task':
      return html`<div class="msg task" data-seq=${seq} data-kind="user"><small class="label">Task from Ava</small>${it.text}</div>`;
    case 'assistant':
      return html`<${Answer} text=${it.text} seq=${seq} />`;
    case 'thinking':
      return html`<details class="thinking" data-seq=${seq} data-kind="thinking"><summary>Thinking</summary><pre>${it.text}</pre></details>`;
    case 'tool':
      return html`<${ToolLine} it=${it} />`;
    case 'spawn':
      return html`<button class="line spawn" data-seq=${seq} data-kind="spawn" onClick=${() => onOpen(it.id)}>
        ↳ started <b>${it.role}</b> ${it.id}<span class="muted"> — ${it.task}</span></button>`;
    case 'progress':
      return html`<button class=${`line progress${it.stalled ? ' stalled' : ''}`} data-seq=${seq} data-kind="progress" onClick=${() => onOpen(it.id)}>
        ⏳ ${it.role} ${it.id} still working${it.activity ? `: ${it.activity}` : ''}
        <span class="muted"> (${duration(it.elapsedMs)}, ${it.tokens} tokens)</span></button>`;
    case 'complete':
      return html`<button class=${`line complete st-${it.status}`} data-seq=${seq} data-kind="complete" onClick=${() => onOpen(it.id)}>
        ${endMark(it.status)} ${it.role} ${it.id} ${statusLabel(it.status)} · ${duration(it.durationMs)} · ${cost(it.costCents, it.tokens)}
        ${it.summary && html`<span class="muted"> — ${it.summary}</span>`}</button>
        ${it.citations && it.citations.length > 0 && html`<${Sources} citations=${it.citations} seq=${seq} />`}`;
    case 'proposal':
      return html`<${Proposal} it=${it} onOpen=${onOpen} />`;
    case 'question':
      return html`<${Question} it=${it} sessionKey=${sessionKey} />`;
    case 'finding':
      return html`<div class="line finding" data-seq=${seq} data-kind="finding">⇪ shared on the board as #${it.id}<span class="muted"> — ${it.text}</span></div>`;
    case 'error':
      return html`<div class="line error" data-seq=${seq} data-kind="error">⚠ ${it.text}</div>`;
    case 'end':
      return html`<div class=${`line end st-${it.status}`} data-seq=${seq} data-kind="end">— ${statusLabel(it.status)} —</div>`;
    default:
      return null;
  }
}

/**
 * The sources a completed subagent's answer cites (the provider's web
 * search citations), each a link that opens in a new tab, with the text
 * it cites. Only http(s) URLs become links; the text is never HTML.
 */
function Sources({ citations, seq }) {
  const safe = (u) => /^https?:\/\//i.test(u || '');
  return html`<ol class="sources" data-seq=${seq} data-kind="sources">
    ${citations.map((c) => html`<li>
      ${safe(c.url)
        ? html`<a href=${c.url} target="_blank" rel="noopener noreferrer nofollow">${c.title || c.url}</a>`
        : html`<span>${c.title || c.url}</span>`}
      ${c.citedText && html`<span class="muted"> — “${c.citedText}”</span>`}</li>`)}
  </ol>`;
}

/**
 * A long command awaiting the person, as what it is: "run_bash: `sleep
 * 120` — estimated 2 min" (the tool, the command's first line, how long
 * it will likely run).
 */
function ProcessLine({ p }) {
  const first = (p.task || '').split('\n')[0];
  const secs = (p.estimate || {}).maxSeconds;
  return html`<span class="process-line"><b>${p.role}</b>: <code>${first}${first !== p.task ? ' …' : ''}</code>${secs > 0 ? ` — estimated ${seconds(secs)}` : ''}</span>`;
}

/**
 * A proposal awaiting the person — a spawn, or a long command of the
 * turn's that waits for the answer — : its text and Yes / No (typing an
 * answer, e.g. "yes but use haiku" or "yes but only 30 seconds", in the
 * composer works too). Once decided it shows how, from the SpawnDecided
 * event.
 */
function Proposal({ it, onOpen }) {
  const [error, setError] = useState('');
  const decide = async (d) => {
    setError('');
    try {
      await confirmSpawn(it.id, d);
    } catch (err) {
      setError(err.message);
    }
  };
  // Each subagent a confirmation started opens with a click, as its
  // "started" line does; a process proposal runs a command instead.
  const process = it.what === 'process';
  const change = it.change ? ` (${it.change})` : '';
  let outcome = it.decision;
  if (it.decision === 'confirmed') {
    outcome = process
      ? `confirmed${change}: running it`
      : html`confirmed${change}: started ${(it.ids || []).map((id, i) => html`${i > 0 && ', '}<a class="open-sub" href=${`#a=${id}`}
        onClick=${(e) => { e.preventDefault(); onOpen(id); }}>${id}</a>`)}`;
  } else if (it.decision && process) outcome = `${it.decision}: nothing was run`;
  return html`
    <div class="proposal" data-seq=${it.seq} data-kind="proposal" data-id=${it.id} data-decision=${it.decision} data-proposal-kind=${it.what}>
      ${process && html`<p class="what"><${ProcessLine} p=${it} /></p>`}
      <pre>${process ? it.text.split('\n').slice(1).join('\n') : it.text}</pre>
      ${it.decision
        ? html`<p class="muted">${outcome}</p>`
        : html`<p><button type="button" class="yes" onClick=${() => decide('yes')}>Yes</button>
            <button type="button" class="ghost no" onClick=${() => decide('no')}>No</button></p>`}
      ${error && html`<p class="offer error" role="alert">${error}</p>`}
    </div>`;
}

/**
 * A subagent's question to the person (ask_user): its text and an answer
 * box; once answered (or given up) it shows how, from QuestionAnswered.
 */
function Question({ it, sessionKey }) {
  const [text, setText] = useState('');
  const [error, setError] = useState('');
  const submit = async (e) => {
    e.preventDefault();
    if (!text.trim()) return;
    setError('');
    try {
      await answerQuestion(it.id, text.trim(), sessionKey);
    } catch (err) {
      setError(err.message);
    }
  };
  return html`
    <div class="question" data-seq=${it.seq} data-kind="question" data-id=${it.id} data-by=${it.by}>
      <p><b>${it.role} ${it.subagentId} asks:</b> ${it.text}</p>
      ${it.by === 'person' && html`<p class="muted">answered: ${it.answer}</p>`}
      ${it.by === 'timeout' && html`<p class="muted">no answer in time; it went on without one</p>`}
      ${!it.by && html`<form class="answer" onSubmit=${submit}>
          <input value=${text} placeholder="Your answer" aria-label=${`Answer to ${it.subagentId}`} onInput=${(e) => setText(e.currentTarget.value)} />
          <button type="submit" disabled=${!text.trim()}>Answer</button>
        </form>`}
      ${error && html`<p class="offer error" role="alert">${error}</p>`}
    </div>`;
}

/**
 * An answer (Ava's or a subagent's), rendered as Markdown: untrusted
 * text made safe by markdown.js (no raw HTML, safe links only, no
 * images). The person's own messages stay plain text.
 */
function Answer({ text, seq }) {
  const __html = useMemo(() => markdown(text), [text]);
  return html`<div class="msg assistant md" data-seq=${seq} data-kind="assistant" dangerouslySetInnerHTML=${{ __html }} />`;
}

/** draftEvery is how often, in ms, a streaming answer is rendered again. */
const draftEvery = 250;

/**
 * The answer streaming now, as Markdown, rendered again at most every
 * draftEvery ms while deltas arrive (parsing costs about 2 µs a
 * character, so rendering on every delta of a long answer would not be
 * cheap); the finished answer replaces it with its AssistantMessage. An
 * unclosed code fence shows as a code block until it closes.
 */
function Draft({ text }) {
  const [shown, setShown] = useState(text);
  const last = useRef(0);
  useEffect(() => {
    if (text === shown) return undefined;
    const t = setTimeout(() => {
      last.current = Date.now();
      setShown(text);
    }, Math.max(0, last.current + draftEvery - Date.now()));
    return () => clearTimeout(t);
  }, [text, shown]);
  const __html = useMemo(() => markdown(shown), [shown]);
  return html`<div class="msg assistant md draft" dangerouslySetInnerHTML=${{ __html }} />`;
}

function ToolLine({ it }) {
  const r = it.result;
  const mark = !r ? '…' : r.success ? '✓' : '✗';
  return html`
    <details class=${`line tool${r && !r.success ? ' failed' : ''}`} data-seq=${it.seq} data-kind="tool">
      <summary><span class="mark">${mark}</span> <code>${it.name}</code> <span class="muted">${shortJSON(it.args, 80)}</span></summary>
      <pre>${JSON.stringify(it.args, null, 2)}</pre>
      ${r && html`<pre class="output">${r.output}</pre>`}
    </details>`;
}

// notSent says why a message did not reach the daemon: its refusal, or
// (fetch's "Failed to fetch", a TypeError) no answer at all, as while
// the daemon restarts.
function notSent(err) {
  if (err instanceof HTTPError) return err.message;
  return 'the daemon did not answer (it may be restarting). It is kept here: send it again once the daemon is back.';
}

/**
 * The message box: Enter sends, Shift+Enter starts a new line. A busy
 * session's 409 offers to queue the message instead; a message that was
 * not sent (the daemon refused it, or did not answer) is kept, with a
 * button that sends it again.
 */
function Composer({ send, placeholder, canSteer }) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(null); // the text a 409 refused
  const [failed, setFailed] = useState(null); // {msg, why}: a message that was not sent, kept to send again
  const att = useAttachments();
  const submit = async (how = {}, again = null) => {
    const msg = (again ?? busy ?? text).trim();
    if (!msg || att.uploading) return;
    setFailed(null);
    try {
      await send(msg, { ...how, attachments: att.ids() });
      setText((t) => (t.trim() === msg ? '' : t));
      setBusy(null);
      att.clear();
    } catch (err) {
      if (err instanceof HTTPError && err.status === 409) setBusy(msg);
      else setFailed({ msg, why: notSent(err) });
    }
  };
  const onKeyDown = (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    }
  };
  return html`
    <form class="composer" onSubmit=${(e) => { e.preventDefault(); submit(); }} ...${dropTarget(att)}>
      ${busy != null && html`
        <div class="offer" role="alert">
          <span>${canSteer
            ? 'Still running. Steer it (it reads your message before its next step, nothing stops) or queue the message for when it ends?'
            : 'Still running. Queue this message for when the current turn ends?'}</span>
          ${canSteer && html`<button type="button" class="steer" onClick=${() => submit({ steer: true })}>Steer</button>`}
          <button type="button" class="queue" onClick=${() => submit({ queue: true })}>Queue</button>
          <button type="button" class="ghost" onClick=${() => setBusy(null)}>Cancel</button>
        </div>`}
      ${failed && html`
        <div class="offer error not-sent" role="alert">
          <span>Your message was not sent: ${failed.why}</span>
          <button type="button" class="resend" onClick=${() => submit({}, failed.msg)}>Send again</button>
          <button type="button" class="ghost" onClick=${() => setFailed(null)}>Dismiss</button>
        </div>`}
      <${AttachmentStrip} att=${att} />
      <textarea rows="1" value=${text} placeholder=${placeholder} aria-label=${placeholder}
        onInput=${(e) => setText(e.currentTarget.value)} onKeyDown=${onKeyDown} onPaste=${pasteFiles(att)} />
      <button type="submit" disabled=${!text.trim() || att.uploading}>Send</button>
    </form>`;
}
