// app.js: the Ava web panel. The session being shown (and the subagent
// opened in it) live in the URL's hash, so a reload or a shared link
// comes back to the same conversation, replayed from the daemon.
import { h, render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';
import { getJSON, logout, onTokenNeeded, ready, renameSession } from './api.js';
import { ago } from './format.js';
import { Chat } from './chat.js';
import { Boards, SubagentList, Timeline, useSubagents } from './subagents.js';

const html = htm.bind(h);

/** Reads {session, open} from the hash: #s=<session key>&a=<subagent ID>. */
function readHash() {
  const q = new URLSearchParams(location.hash.slice(1));
  return { session: q.get('s') || '', open: q.get('a') || '' };
}

function writeHash({ session, open }) {
  const q = new URLSearchParams();
  if (session) q.set('s', session);
  if (open) q.set('a', open);
  const next = q.toString();
  if (location.hash.slice(1) !== next) location.hash = next;
}

function useHash() {
  const [route, setRoute] = useState(readHash);
  useEffect(() => {
    const on = () => setRoute(readHash());
    window.addEventListener('hashchange', on);
    on(); // a change between the first render and this effect
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return [route, (r) => writeHash({ ...route, ...r })];
}

function App() {
  const [route, go] = useHash();
  const [tab, setTab] = useState('chat'); // phone only: chat or subagents
  const [health, setHealth] = useState(null);
  const [asking, setAsking] = useState(null);
  const [loggedOut, setLoggedOut] = useState(false);
  const list = useSubagents(loggedOut ? null : route.session);
  useEffect(() => {
    onTokenNeeded((why) => new Promise((resolve) => setAsking({ resolve, why })));
    getJSON('/healthz').then(setHealth, () => {});
  }, []);
  if (loggedOut) return html`<${LoggedOut} />`;
  const openSub = (id) => {
    go({ open: id });
    setTab('chat');
  };
  const sub = route.open ? list.find((sa) => sa.id === route.open) : null;
  const running = list.filter((sa) => sa.status === 'running' || sa.status === 'queued').length;
  return html`
    <div class=${`app tab-${tab}`}>
      <header class="top">
        <h1>Ava</h1>
        ${health?.offline && html`<span class="pill offline" title=${health.model}>offline model</span>`}
        <${SessionPicker} current=${route.session} onPick=${(key) => go({ session: key, open: '' })} />
        <button class="ghost new-chat" onClick=${() => go({ session: '', open: '' })}>New chat</button>
        <button class="ghost logout" title="End this browser's login to the daemon"
          onClick=${async () => { await logout(); setLoggedOut(true); }}>Log out</button>
      </header>
      <${ConfigBanner} />
      <nav class="tabs">
        <button class=${tab === 'chat' ? 'on' : ''} onClick=${() => setTab('chat')}>Chat</button>
        <button class=${tab === 'side' ? 'on' : ''} onClick=${() => setTab('side')}>
          Subagents${list.length > 0 && ` (${list.length})`}${running > 0 && ` · ${running} running`}</button>
      </nav>
      <main class="panes">
        ${route.open
          ? html`<${Chat} key=${`sub:${route.open}`} sessionKey=${`ava:subagent:${route.open}`}
              title=${sub ? `${sub.role} ${sub.id}` : route.open}
              subagent=${sub || { id: route.open, role: 'subagent', status: '' }}
              onOpen=${openSub} onBack=${() => go({ open: '' })} />`
          : html`<${Chat} key=${`main:${route.session}`} sessionKey=${route.session} title="Ava"
              onStarted=${(key) => go({ session: key, open: '' })} onOpen=${openSub} />`}
        <aside class="side">
          <h2>Subagents</h2>
          <${SubagentList} list=${list} open=${route.open} onOpen=${openSub} />
          <h2>Timeline</h2>
          ${list.length > 0 ? html`<${Timeline} list=${list} open=${route.open} onOpen=${openSub} />` : html`<p class="muted hint">Bars appear as subagents run.</p>`}
          <${Boards} list=${list} open=${route.open} onOpen=${openSub} />
        </aside>
      </main>
      ${asking && html`<${TokenDialog} why=${asking.why} done=${(t) => { asking.resolve(t); setAsking(null); }} />`}
    </div>`;
}

/** How often the panel asks /readyz how the daemon's configuration stands. */
const CONFIG_EVERY_MS = 5000;

/**
 * A banner while the daemon's configuration is not what its files say: a
 * bad edit it refused (it runs its previous configuration; the message
 * names the file, line and setting), role files that do not load, and
 * changed settings that wait for a restart. It clears once an edit fixes
 * it (the daemon reloads by itself when the files change).
 */
function ConfigBanner() {
  const [cfg, setCfg] = useState(null);
  useEffect(() => {
    const look = () => getJSON('/readyz').then((r) => setCfg(r.config || null), () => {});
    look();
    const t = setInterval(look, CONFIG_EVERY_MS);
    return () => clearInterval(t);
  }, []);
  if (!cfg) return null;
  return html`
    <div class="config-banner" role="alert">
      ${cfg.error && html`<p><strong>config.yaml not applied</strong>: the daemon runs its previous configuration. ${cfg.error}</p>`}
      ${(cfg.roleErrors || []).map((e) => html`<p><strong>Role file not loaded</strong>: ${e}</p>`)}
      ${(cfg.restart || []).map((r) => html`<p><strong>Restart needed</strong>: ${r}.</p>`)}
    </div>`;
}

/**
 * Lists the daemon's main sessions, most recent first, to go back to one:
 * each by its title (its first message, or what the person renamed it to)
 * and its last activity, the key in the option's tooltip. The list is read
 * again when the menu is opened, so a new chat's title shows once its
 * first message is stored. Rename edits the current session's title.
 */
function SessionPicker({ current, onPick }) {
  const [sessions, setSessions] = useState([]);
  const [editing, setEditing] = useState(null); // the title being typed
  const [error, setError] = useState('');
  const load = () => getJSON('/api/sessions?limit=50').then((b) => setSessions(b.sessions || []), () => {});
  useEffect(() => { load(); }, [current]);
  const shown = sessions.slice();
  if (current && !shown.some((ss) => ss.key === current)) shown.unshift({ key: current, title: '', state: 'idle' });
  const cur = shown.find((ss) => ss.key === current);
  const save = async (e) => {
    e.preventDefault();
    try {
      await renameSession(current, editing);
      setEditing(null);
      setError('');
      load();
    } catch (err) {
      setError(err.message);
    }
  };
  if (editing !== null) {
    return html`
      <form class="rename" onSubmit=${save}>
        <input aria-label="Session title" maxlength="120" autofocus value=${editing}
          onInput=${(e) => setEditing(e.currentTarget.value)}
          onKeyDown=${(e) => { if (e.key === 'Escape') setEditing(null); }} />
        <button type="submit">Save</button>
        <button type="button" class="ghost" onClick=${() => { setEditing(null); setError(''); }}>Cancel</button>
        ${error && html`<span class="error" role="alert">${error}</span>`}
      </form>`;
  }
  return html`
    <select class="key" aria-label="Session" value=${current} onFocus=${load} onMouseDown=${load}
      onChange=${(e) => onPick(e.currentTarget.value)}>
      <option value="">new conversation</option>
      ${sessionLabels(shown, current).map(([ss, label]) => html`<option value=${ss.key} title=${ss.key}>${label}</option>`)}
    </select>
    ${current && html`<button class="ghost rename-btn" title="Rename this conversation" aria-label="Rename"
      onClick=${() => { setEditing(cur?.title || ''); setError(''); }}>✎</button>`}`;
}

/**
 * A session in the menu: "Title · 5 min ago", with its state when busy.
 * The open session's label leaves its state out: the list is read when
 * the menu opens, so it would go stale while the chat below shows the
 * live state.
 */
function sessionLabel(ss, open, exact = false) {
  const parts = [ss.title || 'untitled conversation'];
  if (ss.updatedAt) parts.push(exact ? `${ago(ss.updatedAt)} (${clock(ss.updatedAt)})` : ago(ss.updatedAt));
  if (!open && ss.state && ss.state !== 'idle') parts.push(ss.state.replaceAll('_', ' '));
  return parts.join(' · ');
}

/**
 * The menu's labels, each told apart from the others: sessions whose
 * title and "5 min ago" are the same get the time of their last
 * activity to the second, and any still alike the end of their key.
 */
export function sessionLabels(list, current) {
  const count = (labels) => labels.reduce((m, l) => m.set(l, (m.get(l) || 0) + 1), new Map());
  let labels = list.map((ss) => sessionLabel(ss, ss.key === current));
  let seen = count(labels);
  labels = list.map((ss, i) => (seen.get(labels[i]) > 1 ? sessionLabel(ss, ss.key === current, true) : labels[i]));
  seen = count(labels);
  return list.map((ss, i) => [ss, seen.get(labels[i]) > 1 ? `${labels[i]} · …${ss.key.slice(-6)}` : labels[i]]);
}

/** A time of day to the second, for telling sessions apart: "14:03:12". */
function clock(when) {
  return new Date(when).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
}

/**
 * Asks for the daemon's token, when the browser has no login: the token is
 * traded for a login (a session cookie and a secret this tab keeps) and
 * not kept by the page. why says what went wrong before, if anything (a
 * spent login link, a wrong token).
 */
function TokenDialog({ done, why }) {
  const [value, setValue] = useState('');
  return html`
    <div class="modal" role="dialog" aria-modal="true" aria-labelledby="token-title">
      <form onSubmit=${(e) => { e.preventDefault(); done(value.trim() || null); }}>
        <h2 id="token-title">Log in</h2>
        ${why && html`<p class="error" role="alert">${why}</p>`}
        <p>Run <code>ava panel</code> and open the link it prints (it works once),
          or enter the daemon's token: <code>AVA_TOKEN</code>, or the file <code>daemon.token</code> in its data root.</p>
        <input type="password" autocomplete="current-password" autofocus value=${value}
          onInput=${(e) => setValue(e.currentTarget.value)} aria-label="Token" />
        <div class="actions">
          <button type="button" class="ghost" onClick=${() => done(null)}>Cancel</button>
          <button type="submit">Log in</button>
        </div>
      </form>
    </div>`;
}

/** What the panel shows once logged out: nothing of the daemon's. */
function LoggedOut() {
  return html`
    <div class="logged-out">
      <h1>Ava</h1>
      <p>You are logged out: this browser's login has ended on the daemon.</p>
      <p>To log in again, run <code>ava panel</code> and open the link it prints, or log in with the daemon's token.</p>
      <button onClick=${() => location.reload()}>Log in</button>
    </div>`;
}

/**
 * What a login link that did not log in shows (already used, or expired,
 * in a browser with no login): what to do, never the daemon's raw answer.
 */
function LinkSpent({ why, onToken }) {
  return html`
    <div class="link-spent" role="alert">
      <h1>Ava</h1>
      <h2>This login link does not work any more</h2>
      <p>Each link logs one browser in, once, within 15 minutes. For a new one, run <code>ava panel</code> where Ava runs and open the link it prints.</p>
      <p>Or log in with the daemon's token (<code>AVA_TOKEN</code>, or the file <code>daemon.token</code> in its data root).</p>
      <p><button onClick=${onToken}>Log in with the token</button></p>
      ${why && html`<p class="muted detail">The daemon said: ${why}</p>`}
    </div>`;
}

/** The page: the panel, or what to do when a login link did not work. */
function Page({ spent }) {
  const [why, setWhy] = useState(spent);
  return why ? html`<${LinkSpent} why=${why} onToken=${() => setWhy('')} />` : html`<${App} />`;
}

// A login link's code is traded first, so that the page shows nothing it
// would have to ask the token for (and a link opened in passing still logs in).
ready.then((spent) => render(html`<${Page} spent=${spent} />`, document.getElementById('app')));
