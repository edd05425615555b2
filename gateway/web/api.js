// api.js: the daemon's HTTP API. The browser is logged in by a web panel
// login: a session cookie (HttpOnly: the page cannot read it) and the
// login's secret, which the page keeps in this tab's sessionStorage and
// sends in the X-Ava-Login header with every call. The daemon refuses the
// cookie without it: a browser sends a host's cookies to all its ports,
// but only the daemon's own origin (scheme, host and port) can read its
// sessionStorage. A login is made from the one-time link ava serve and
// ava panel print (its code comes in the URL's fragment, #login=CODE,
// which the browser never sends anywhere) or from the token the person
// enters, which the page does not keep. Other tabs of the panel get the
// secret from an open one (a BroadcastChannel, which is same-origin too).
// Event streams are read with fetch rather than EventSource, which could
// not send the header, so that one parser serves both POST /api/chat and
// GET /api/chat/stream.

// An older panel kept the token in localStorage: forget it.
localStorage.removeItem('ava.token');

/** An error answer from the daemon: its status and its {"error"} text. */
export class HTTPError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

const HEADER = 'X-Ava-Login';
const KEPT = 'ava.login'; // the sessionStorage key of the login's secret

let secret = sessionStorage.getItem(KEPT) || '';
let loginError = ''; // why the last login failed, for the dialog

// keep sets (or, with '', forgets) this tab's login secret.
function keep(s) {
  secret = s || '';
  if (secret) sessionStorage.setItem(KEPT, secret);
  else sessionStorage.removeItem(KEPT);
}

// The panel's tabs share a login: a tab without one asks the others, and
// a logout in one is a logout in all.
const tabs = typeof BroadcastChannel === 'function' ? new BroadcastChannel('ava.login') : null;
tabs?.addEventListener('message', (e) => {
  const m = e.data || {};
  if (m.type === 'ask' && secret) tabs.postMessage({ type: 'secret', secret });
  else if (m.type === 'logout') keep('');
});

// fromOtherTab asks the panel's other tabs for their login (not the one
// that just failed) and resolves true once it has one.
function fromOtherTab(failed) {
  if (!tabs) return Promise.resolve(false);
  return new Promise((resolve) => {
    const on = (e) => {
      if (e.data?.type === 'secret' && e.data.secret && e.data.secret !== failed) done(e.data.secret);
    };
    const timer = setTimeout(() => done(''), 300);
    function done(s) {
      clearTimeout(timer);
      tabs.removeEventListener('message', on);
      if (s) keep(s);
      resolve(!!s);
    }
    tabs.addEventListener('message', on);
    tabs.postMessage({ type: 'ask' });
  });
}

// exchange trades a credential (a login link's code in the body, or the
// token as a bearer token) for a login: the cookie, and the secret kept
// here. It resolves true when logged in, else false with loginError set.
async function exchange(body, headers = {}) {
  try {
    const res = await fetch('/api/login', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    if (!res.ok) {
      loginError = (await res.json().catch(() => ({}))).error || `${res.status} ${res.statusText}`;
      return false;
    }
    keep((await res.json()).secret);
    loginError = '';
    return true;
  } catch (err) {
    loginError = err.message;
    return false;
  }
}

// A login link: trade its code before any call, and take it out of the
// address bar and the history at once. A link that was already used (or
// expired) in a browser that is logged in (this tab, or another tab of
// the panel, has a login) just opens the panel; without a login it
// resolves to why, for the page that says what to do.
function takeLink() {
  const q = new URLSearchParams(location.hash.slice(1));
  const code = q.get('login');
  if (code === null) return null;
  q.delete('login');
  const rest = q.toString();
  history.replaceState(null, '', location.pathname + location.search + (rest ? `#${rest}` : ''));
  return exchange({ code }).then(async (ok) => {
    if (ok || secret || (await fromOtherTab(''))) return '';
    return loginError;
  });
}

let starting = takeLink();

// The same link opened again in a tab that shows the panel changes only
// the address's fragment: take it out, and trade it if it is a new one.
window.addEventListener('hashchange', () => {
  const again = takeLink();
  if (again) starting = again;
});

/**
 * Resolves once a login link's code, if the page came with one, is
 * traded: to '' when the panel can be shown, else to why the link did
 * not log this browser in (already used, expired).
 */
export const ready = starting || Promise.resolve('');

let askToken = null; // (why) => Promise<string|null>, set by the app
let asking = null; // the login under way, shared by every caller

/** Sets how the panel asks the person for the daemon's token. */
export function onTokenNeeded(fn) {
  askToken = fn;
}

// login logs in once, however many requests got a 401 at the same
// moment: with another tab's login if one has a working one, else with
// the token the person enters (asked again while it is wrong). failed is
// the secret the 401 came with, which has ended. It resolves true when
// the browser is logged in.
function login(failed) {
  asking ??= (async () => {
    if (secret && secret === failed) keep('');
    if (await fromOtherTab(failed)) return true;
    if (!askToken) return false;
    for (;;) {
      const t = await askToken(loginError);
      if (!t) return false;
      if (await exchange({}, { Authorization: `Bearer ${t}` })) return true;
    }
  })().finally(() => { asking = null; });
  return asking;
}

// request performs one call with the login's secret; a 401 logs in once
// and retries.
async function request(path, init = {}) {
  if (starting) await starting;
  for (let attempt = 0; ; attempt++) {
    const sent = secret;
    const headers = new Headers(init.headers);
    if (sent) headers.set(HEADER, sent);
    const res = await fetch(path, { ...init, headers });
    if (res.status === 401 && attempt === 0 && (await login(sent))) continue;
    if (res.ok) return res;
    let msg = `${res.status} ${res.statusText}`;
    try {
      msg = (await res.json()).error || msg;
    } catch { /* not JSON: keep the status line */ }
    throw new HTTPError(res.status, msg);
  }
}

/**
 * Logs this browser out: the daemon revokes the login (in every tab, which
 * are told to forget it too), and the page keeps no secret.
 */
export async function logout() {
  const sent = secret;
  keep('');
  tabs?.postMessage({ type: 'logout' });
  await fetch('/api/logout', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', [HEADER]: sent },
    body: '{}',
  }).catch(() => {});
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

/**
 * Uploads files (a FileList or an array of File) as attachments, all or
 * none: resolves with their records ({id, name, type, kind, size}); a
 * refusal (too big, too many, an unknown type) rejects with an HTTPError
 * naming the file and the limit.
 */
export async function uploadAttachments(files) {
  const form = new FormData();
  for (const f of files) form.append('file', f, f.name);
  return (await (await request('/api/attachments', { method: 'POST', body: form })).json()).attachments;
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
export async function sendMessage(sessionKey, message, { queue = false, steer = false, attachments = [] } = {}) {
  const ctl = new AbortController();
  const body = { sessionKey, message, queue, steer };
  if (attachments.length > 0) body.attachments = attachments;
  const res = await postJSON('/api/chat', body, ctl.signal);
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
