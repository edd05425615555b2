// attachments.js: files attached to a message (seed 004's
// AttachmentStrip). In the composer: a button, drag and drop and paste
// upload files (POST /api/attachments) and show them as a strip until the
// message is sent with their IDs. In the history: a message's attachment
// lines, "[Attachment A-…: name · type · size bytes, …]" (as the daemon
// gives them to the model, ava.Runtime.WithAttachments), shown as the
// message's strip, a text file's content folded under its chip.
import { h } from 'preact';
import { useRef, useState } from 'preact/hooks';
import htm from 'htm';
import { uploadAttachments } from './api.js';

const html = htm.bind(h);

/** A size in bytes as a person reads it. */
export function size(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} kB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

const head = /\n\n\[Attachment (A-[0-9a-f]{12}): (.*?) · (\S+) · (\d+) bytes, ([^\n]*)\]\n?/g;
const block = /^<untrusted source="[^"\n]*">\n([\s\S]*?)\n<\/untrusted>/;

/**
 * Splits a message as stored into the person's text and its attachments
 * ({id, name, type, size, content?: a text file's, where?: a file's path
 * in the workspace}).
 */
export function splitAttachments(text) {
  const found = [...(text || '').matchAll(head)];
  if (found.length === 0) return { text, attachments: [] };
  const attachments = found.map((m, i) => {
    const after = text.slice(m.index + m[0].length, i + 1 < found.length ? found[i + 1].index : undefined);
    const inline = after.match(block);
    const where = m[5].match(/in the workspace at (\S+):/);
    return { id: m[1], name: m[2], type: m[3], size: Number(m[4]), content: inline ? inline[1] : null, where: where ? where[1] : '' };
  });
  return { text: text.slice(0, found[0].index), attachments };
}

/** A sent message's attachments, as chips (a text file's content folded). */
export function MessageAttachments({ items }) {
  if (!items || items.length === 0) return null;
  return html`<div class="attachment-strip sent" data-kind="attachments">
    ${items.map((a) => html`<div class="attachment" data-id=${a.id} title=${a.where ? `in the workspace at ${a.where}` : a.type}>
      ${a.content != null
        ? html`<details><summary>${a.name} <small class="muted">${size(a.size)}</small></summary><pre>${a.content}</pre></details>`
        : html`<span>${a.name} <small class="muted">${a.type} · ${size(a.size)}</small></span>`}
    </div>`)}
  </div>`;
}

/**
 * The composer's attachments: add uploads files (all or none; a refusal
 * is kept as the error to show), remove drops one, clear empties the
 * strip once the message is sent; ids are those ready to send.
 */
export function useAttachments() {
  const [items, setItems] = useState([]);
  const [error, setError] = useState('');
  const [uploading, setUploading] = useState(0);
  const add = async (files) => {
    const list = [...(files || [])];
    if (list.length === 0) return;
    setError('');
    setUploading((n) => n + 1);
    try {
      const got = await uploadAttachments(list);
      setItems((xs) => [...xs, ...got]);
    } catch (err) {
      setError(err.message);
    } finally {
      setUploading((n) => n - 1);
    }
  };
  return {
    items,
    error,
    uploading: uploading > 0,
    add,
    remove: (id) => setItems((xs) => xs.filter((a) => a.id !== id)),
    clear: () => { setItems([]); setError(''); },
    ids: () => items.map((a) => a.id),
  };
}

/** The composer's strip: the files to send, each removable, and the button that adds more. */
export function AttachmentStrip({ att }) {
  const input = useRef(null);
  return html`<div class="attachment-strip" data-kind="composer-attachments">
    <input type="file" multiple hidden ref=${input} aria-label="Attach files"
      onChange=${(e) => { att.add(e.currentTarget.files); e.currentTarget.value = ''; }} />
    <button type="button" class="ghost attach" title="Attach files (or drop or paste them)" onClick=${() => input.current?.click()}>Attach</button>
    ${att.items.map((a) => html`<span class="attachment" data-id=${a.id}>
      ${a.name} <small class="muted">${size(a.size)}</small>
      <button type="button" class="ghost remove" aria-label=${`Remove ${a.name}`} onClick=${() => att.remove(a.id)}>×</button></span>`)}
    ${att.uploading && html`<small class="muted">uploading…</small>`}
    ${att.error && html`<span class="error" role="alert">${att.error}</span>`}
  </div>`;
}

/** Props that make an element take dropped files. */
export function dropTarget(att) {
  return {
    onDragOver: (e) => { if (e.dataTransfer?.types?.includes('Files')) e.preventDefault(); },
    onDrop: (e) => {
      if (!e.dataTransfer?.files?.length) return;
      e.preventDefault();
      att.add(e.dataTransfer.files);
    },
  };
}

/** A paste handler that attaches pasted files (a screenshot, a copied file). */
export function pasteFiles(att) {
  return (e) => {
    const files = e.clipboardData?.files;
    if (files && files.length > 0) {
      e.preventDefault();
      att.add(files);
    }
  };
}
