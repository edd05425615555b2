// api.js: the daemon's HTTP API. The browser is logged in by a session
// cookie (HttpOnly, set by the one-time link ava serve prints, or by
// POST /api/login with the token the person enters), which every request
// carries by itself: the page never holds the token. Event streams are
// read with fetch rather than EventSource, so that one parser serves both
// POST /api/chat and GET /api/chat/stream.

// An older panel kept the token in localStorage: forget it.
localStorage.removeItem('ava.token');

/** An error answer from the daemon: its status and its {"error"} text. */
export class HTTPError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

let askToken = null; // () => Promise<string|null>, set by the app
let asking = null; // the login under way, shared by every caller

/** Sets how the panel asks the person for the daemon's token. */
export function onTokenNeeded(fn) {
  askToken = fn;
}

// login asks once for the token, however many requests got a 401 at
// the same moment, and exchanges it for a session cookie. It resolves
// true when the browser is logged in.
function login() {
  if (!askToken) return Promise.resolve(false);
  asking ??= (async () => {
    const t = await askToken();
    if (!t) return false;
    const res = await fetch('/api/login', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${t}` },
      body: '{}',
    });
    return res.ok;
  })().finally(() => { asking = null; });
  return asking;
}

// request performs one call; a 401 logs in once and retries.
async function request(path, init = {}) {
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(path, init);
    if (res.status === 401 && attempt === 0 && (await login())) continue;
    if (res.ok) return res;
    let msg = `${res.status} ${res.statusText}`;
    try {
      msg = (await res.json()).error || msg;
    } catch { /* not JSON: keep the status line */ }
    throw new HTTPError(res.status, msg);
  }
}

/** GETs path and decodes its JSON answer. */
export async function getJSON(path) {
  return (await request(path)).json();
}

/** POSTs body as JSON to path and returns the response. */
export function postJSON(path, body, signal) {
  return request(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
}

/** Renames a main session (the title its menu shows); resolves with the session. */
export async function renameSession(sessionKey, title) {
  return (await request(`/api/sessions/${encodeURIComponent(sessionKey)}`, {
    method: 'PATCH',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ title }),
  })).json();
}

/**
 * Sends a message to a session (none: a new main session). Resolves with
 * {sessionKey, queued} once the daemon has taken it; the turn's events
 * are read from the session's stream (see follow), so this stream is
 * closed at once, which does not stop the turn. A busy session rejects
 * with an HTTPError of status 409 unless queue is set; steer delivers a
 * message to a running subagent before its next step.
 */
export async function sendMessage(sessionKey, message, { queue = false, steer = false } = {}) {
  const ctl = new AbortController();
  const res = await postJSON('/api/chat', { sessionKey, message, queue, steer }, ctl.signal);
  try {
    for await (const m of readEvents(res)) {
      if (m.event === 'session') return JSON.parse(m.data);
    }
    throw new Error('the daemon closed the stream before it took the message');
  } finally {
    ctl.abort();
  }
}

/**
 * Decides a spawn proposal: decision is 'yes' or 'no'. Resolves with the
 * decision ({decision, subagentIds, …}); a proposal already decided or
 * expired rejects with an HTTPError of status 409.
 */
export async function confirmSpawn(pendingId, decision) {
  return (await postJSON(`/api/spawns/${encodeURIComponent(pendingId)}/confirm`, { decision })).json();
}

/** Stops a session's run (a main session's turn, or a subagent). */
/**
 * Answers a subagent's question (ask_user). Resolves with the question;
 * one already answered or given up rejects with an HTTPError 404.
 */
export async function answerQuestion(id, answer, sessionKey) {
  const res = await postJSON(`/api/questions/${encodeURIComponent(id)}/answer`, { answer, sessionKey });
  return res.json();
}

export async function stopSession(sessionKey) {
  return (await postJSON('/api/chat/stop', { sessionKey })).json();
}

/**
 * Follows a session's events from the start, live, for as long as the
 * returned function is not called. A dropped connection is resumed by
 * itself after the last numbered event received (`after`), so nothing is
 * missed and nothing is repeated; the live-only events (text and thinking
 * deltas, activity) of the gap are gone, which onStatus('reconnecting')
 * lets the view account for. onEvent gets each event (its audit-log JSON
 * with seq); onStatus gets 'live', 'reconnecting', or {error} when the
 * session cannot be followed.
 */
export function follow(sessionKey, { onEvent, onStatus }) {
  const ctl = new AbortController();
  let last = 0;
  const run = async () => {
    for (let delay = 250; !ctl.signal.aborted; delay = Math.min(delay * 2, 4000)) {
      try {
        const q = new URLSearchParams({ sessionKey, after: String(last) });
        const res = await request(`/api/chat/stream?${q}`, { signal: ctl.signal });
        onStatus('live');
        delay = 125;
        for await (const m of readEvents(res)) {
          const ev = JSON.parse(m.data);
          if (ev.seq) {
            if (ev.seq <= last) continue; // already shown
            last = ev.seq;
          }
          onEvent(ev);
        }
      } catch (err) {
        if (ctl.signal.aborted) return;
        if (err instanceof HTTPError && err.status !== 503 && err.status !== 401) {
          onStatus({ error: err.message });
          return;
        }
      }
      if (ctl.signal.aborted) return;
      onStatus('reconnecting');
      await pause(delay, ctl.signal);
    }
  };
  run();
  return () => ctl.abort();
}

// pause waits ms, less if the browser comes back online or signal aborts.
function pause(ms, signal) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      window.removeEventListener('online', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    window.addEventListener('online', done);
    signal.addEventListener('abort', done);
  });
}

/** Yields {event, id, data} for each message of a text/event-stream body. */
export async function* readEvents(res) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let end;
      while ((end = buf.indexOf('\n\n')) >= 0) {
        const msg = parseMessage(buf.slice(0, end));
        buf = buf.slice(end + 2);
        if (msg) yield msg;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

// parseMessage reads one SSE message; comments alone (heartbeats) are null.
function parseMessage(block) {
  const msg = { event: 'message', id: '', data: [] };
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') msg.data.push(value);
    else if (field === 'event' || field === 'id') msg[field] = value;
  }
  return msg.data.length ? { ...msg, data: msg.data.join('\n') } : null;
}
