// format.js: numbers for people.

/** A cost in cents: "0.42¢", or "$1.23" from a dollar up. */
export function cents(c) {
  const v = c || 0;
  if (v >= 100) return `$${(v / 100).toFixed(2)}`;
  return `${v < 10 ? v.toFixed(2) : v.toFixed(1)}¢`;
}

/**
 * A cost for people: "unpriced" when the model has no known price (the
 * stream's CostUpdate says so with unpriced; a record that spent tokens
 * and costs nothing is read the same way, as the budget does: a model
 * priced at zero is not bounded by cost either), else cents(c).
 */
export function cost(c, tokenCount, unpriced = false) {
  return unpriced || ((tokenCount || 0) > 0 && !c) ? 'unpriced' : cents(c);
}

/**
 * A roll-up's total: cents, "unpriced" when nothing in it is priced, and
 * "1.20¢ + unpriced" when some models are priced and some are not.
 */
export function totalCost(total, byModel = []) {
  const some = byModel.some((m) => cost(m.costCents, m.tokens) === 'unpriced');
  if (some && total.costCents > 0) return `${cents(total.costCents)} + unpriced`;
  return cost(total.costCents, total.tokens);
}

/**
 * A run's status for people: "stopped" for cancelled (a stop someone
 * asked for: the person, or a model's cancel_subagent), else the status.
 */
export function statusLabel(status) {
  return status === 'cancelled' ? 'stopped' : status || '';
}

/** A duration in milliseconds: "850 ms", "12.3 s", "2 m 05 s", "1 h 02 m". */
export function duration(ms) {
  const v = Math.max(0, ms || 0);
  if (v < 1000) return `${Math.round(v)} ms`;
  if (v < 60_000) return `${(v / 1000).toFixed(1)} s`;
  const s = Math.floor(v / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} m ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor(s / 60) % 60).padStart(2, '0')} m`;
}

/**
 * A duration in seconds the way a person says it, as the daemon's
 * proposals do (confirm.FormatSeconds): "45 s", "2 min", "1.5 h".
 */
export function seconds(v) {
  const s = Math.max(0, v || 0);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 6) / 10} min`;
  return `${Math.round(s / 360) / 10} h`;
}

/** A token count: "950", "12.4k", "1.2M". */
export function tokens(n) {
  const v = n || 0;
  if (v < 1000) return String(v);
  if (v < 1_000_000) return `${(v / 1000).toFixed(1)}k`;
  return `${(v / 1_000_000).toFixed(1)}M`;
}

/** A JSON value on one line, cut to max characters. */
export function shortJSON(v, max) {
  const s = typeof v === 'string' ? v : JSON.stringify(v ?? {});
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/**
 * How long ago a time was, for a menu: "just now", "5 min ago", "3 h ago",
 * "yesterday", "4 days ago", then the date.
 */
export function ago(when, now = Date.now()) {
  const t = new Date(when).getTime();
  if (!t) return '';
  const s = Math.max(0, (now - t) / 1000);
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  if (s < 2 * 86400) return 'yesterday';
  if (s < 7 * 86400) return `${Math.floor(s / 86400)} days ago`;
  return new Date(t).toLocaleDateString();
}
