// subagents.js: a session's subagents, as a live list and as a timeline.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';
import { getJSON } from './api.js';
import { cost, duration, statusLabel, tokens } from './format.js';

const html = htm.bind(h);

/** How often the list is read again while the page is open. */
const POLL_MS = 1000;

/**
 * Polls the subagents of the main session key (newest first). The list
 * carries what the stream does not: elapsed time, activity, stalls and
 * queue positions as they change.
 */
export function useSubagents(key) {
  const [list, setList] = useState([]);
  useEffect(() => {
    setList([]);
    if (!key) return undefined;
    let stopped = false;
    let timer;
    const load = async () => {
      try {
        const body = await getJSON(`/api/subagents?parent=${encodeURIComponent(key)}`);
        if (!stopped) setList(body.subagents || []);
      } catch { /* the next poll tries again; the chat shows the connection */ }
      if (!stopped) timer = setTimeout(load, POLL_MS);
    };
    load();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [key]);
  return list;
}

function statusText(sa) {
  if (sa.status === 'queued' && sa.queuePosition) return `queued #${sa.queuePosition}`;
  if (sa.status === 'running' && sa.waitingForUser) return 'waiting for you';
  if (sa.status === 'running' && sa.stalled) return 'stalled';
  return statusLabel(sa.status);
}

// shownError is a subagent's error for its row: none for a stop (its pill
// says "stopped"; the record's error is then just "cancelled").
function shownError(sa) {
  const stop = sa.status === 'cancelled' && ['cancelled', 'cancelled: cancelled'].includes(sa.error);
  return stop ? '' : sa.error;
}

/** The list: one row per subagent; a row opens its chat. */
export function SubagentList({ list, open, onOpen }) {
  if (list.length === 0) return html`<p class="muted hint">No subagents in this session yet.</p>`;
  return html`
    <ul class="subagents">
      ${list.map((sa) => html`
        <li key=${sa.id}>
          <button class=${`subagent${sa.id === open ? ' open' : ''}`} data-id=${sa.id} data-status=${sa.status} onClick=${() => onOpen(sa.id)}>
            <span class="row1">
              <b>${sa.role}</b> <code>${sa.id}</code>
              <span class=${`pill st-${sa.stalled ? 'stalled' : sa.status}`}>${statusText(sa)}</span>
            </span>
            <span class="row2 muted">${duration(elapsed(sa))} · ${tokens(sa.tokens)} tokens · ${cost(sa.costCents, sa.tokens)}</span>
            <span class="row3">${sa.activity || shownError(sa) || sa.task}</span>
          </button>
        </li>`)}
    </ul>`;
}

const ms = (t) => (t ? Date.parse(t) : NaN);
const active = (sa) => ['queued', 'pending', 'running'].includes(sa.status);

// span is a subagent's [start, end] in ms: its wall time, from its
// first start (its creation while it waits) to its last end, or now.
function span(sa, now) {
  const start = ms(sa.startedAt) || ms(sa.createdAt) || now - (sa.wallMs || 0);
  const end = ms(sa.endedAt) || (active(sa) ? now : start + (sa.wallMs || 0));
  return [start, Math.max(end, start)];
}

// waitSpans are the subagent's waits for the person (ask_user), each
// [asked, answered] in ms: an open one reaches now (or the run's end).
function waitSpans(sa, now, end) {
  return (sa.waits || []).map((w) => {
    const from = ms(w.askedAt);
    const to = ms(w.answeredAt) || (active(sa) ? now : end);
    return { w, at: [from, Math.max(to, from)] };
  }).filter(({ at }) => !Number.isNaN(at[0]));
}

// waitTitle says what a wait mark stands for.
function waitTitle({ w, at }) {
  const by = { person: 'you answered', orchestrator: 'Ava answered', timeout: 'no answer in time', cancelled: 'stopped' }[w.by] || 'still waiting';
  return `waited for you ${duration(at[1] - at[0])} (${w.questionId}): ${by}`;
}

// elapsed is the subagent's active time (elapsedMs: its time running,
// over all its turns, without the idle time between them), the figure
// ava ps and ava status show.
const elapsed = (sa) => sa.elapsedMs;

/**
 * The timeline: a bar per subagent from its start to its end, coloured by
 * status, with its cost; on the bar, a mark for each time it waited for
 * the person (ask_user, from the question to the answer).
 */
export function Timeline({ list, open, onOpen }) {
  if (list.length === 0) return null;
  const now = Date.now();
  const rows = list.map((sa) => {
    const at = span(sa, now);
    return { sa, at, waits: waitSpans(sa, now, at[1]) };
  }).sort((a, b) => a.at[0] - b.at[0]);
  const t0 = Math.min(...rows.map((r) => r.at[0]));
  const t1 = Math.max(...rows.map((r) => r.at[1]), t0 + 1000);
  const pct = (t) => `${((100 * (t - t0)) / (t1 - t0)).toFixed(2)}%`;
  return html`
    <div class="timeline" role="list">
      ${rows.map(({ sa, at, waits }) => html`
        <button key=${sa.id} role="listitem" class=${`tl-row${sa.id === open ? ' open' : ''}`} data-id=${sa.id}
          onClick=${() => onOpen(sa.id)} title=${[`${sa.role} ${sa.id}: ${statusLabel(sa.status)}, active ${duration(sa.elapsedMs)} of ${duration(at[1] - at[0])} wall, ${cost(sa.costCents, sa.tokens)}`, ...waits.map(waitTitle)].join('\n')}>
          <span class="tl-label">${sa.role} <code>${sa.id}</code></span>
          <span class="tl-track">
            <span class=${`tl-bar st-${sa.status}`} data-status=${sa.status}
              style=${{ left: pct(at[0]), width: `max(${pct(at[1])} - ${pct(at[0])}, 3px)` }} />
            ${waits.map((wt) => html`<span class=${`tl-wait${wt.w.answeredAt ? '' : ' open'}`} data-question=${wt.w.questionId}
              title=${waitTitle(wt)} style=${{ left: pct(wt.at[0]), width: `max(${pct(wt.at[1])} - ${pct(wt.at[0])}, 3px)` }} />`)}
          </span>
          <span class="tl-cost">${cost(sa.costCents, sa.tokens)}</span>
        </button>`)}
      <div class="tl-axis muted"><span>0 s</span><span>${duration(t1 - t0)}</span></div>
      ${rows.some((r) => r.waits.length > 0) && html`<p class="tl-legend muted"><span class="tl-wait" aria-hidden="true" /> waited for you (a question, until its answer)</p>`}
    </div>`;
}

/**
 * The groups among the subagents (parallel groups and chains), in the
 * order their first member appears, each with its members.
 */
function groupsOf(list) {
  const by = new Map();
  for (const sa of list) {
    if (!sa.groupId) continue;
    if (!by.has(sa.groupId)) by.set(sa.groupId, []);
    by.get(sa.groupId).push(sa);
  }
  return [...by.entries()].map(([id, members]) => ({ id, members }));
}

/**
 * Polls a group's board while a member is active, and reads it once more
 * when they have all ended.
 */
function useFindings(group, live) {
  const [findings, setFindings] = useState([]);
  useEffect(() => {
    let stopped = false;
    let timer;
    const load = async () => {
      try {
        const body = await getJSON(`/api/groups/${encodeURIComponent(group)}/findings`);
        if (!stopped) setFindings(body.findings || []);
      } catch { /* the next poll tries again */ }
      if (!stopped && live) timer = setTimeout(load, POLL_MS);
    };
    load();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [group, live]);
  return findings;
}

const clock = (t) => new Date(t).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });

/** One group's view: its members and its board (what they shared with post_finding). */
function Board({ group, open, onOpen }) {
  const live = group.members.some(active);
  const findings = useFindings(group.id, live);
  const mode = group.members[0]?.mode === 'chain' ? 'Chain' : 'Parallel group';
  return html`
    <section class="board" data-group=${group.id}>
      <h3>${mode} of ${group.members.length}: ${group.members.map((sa) => html`
        <button key=${sa.id} class=${`member${sa.id === open ? ' open' : ''}`} onClick=${() => onOpen(sa.id)}><code>${sa.id}</code></button>`)}</h3>
      ${findings.length === 0
        ? html`<p class="muted hint">No findings shared yet.</p>`
        : html`<ol class="findings" title="Shared by subagents: their text is data from other agents, not instructions">
            ${findings.map((f) => html`
              <li key=${f.id} class="finding" data-id=${f.id}>
                <span class="meta muted">#${f.id} <button class="poster" onClick=${() => onOpen(f.subagentId)}><code>${f.subagentId}</code></button> ${f.role} · ${clock(f.postedAt)}</span>
                <span class="text">${f.text}</span>
              </li>`)}
          </ol>`}
    </section>`;
}

/** The boards of the session's groups; nothing when no subagent ran in a group. */
export function Boards({ list, open, onOpen }) {
  const groups = groupsOf(list);
  if (groups.length === 0) return null;
  return html`
    <h2>Boards</h2>
    ${groups.map((g) => html`<${Board} key=${g.id} group=${g} open=${open} onOpen=${onOpen} />`)}`;
}
