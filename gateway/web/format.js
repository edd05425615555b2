// format.js: numbers for people.

// Money reads one way on every surface: this is internal/money's rule
// (Cents and Spend), tested against the same table of cases
// (internal/money/testdata/cases.json) by gateway's
// TestFormatJSReadsMoneyAsGo. Rounding is half up on hundredths (tenths,
// whole cents) of a cent, the same float operations as the Go side.

/** An amount in cents: "0¢", "<0.01¢", "0.42¢", "12.3¢", "$1.23". */
export function cents(c) {
  if (!(c > 0)) return '0¢';
  const hundredths = Math.round(c * 100);
  if (hundredths === 0) return '<0.01¢';
  if (hundredths < 1000) return `${fixed(hundredths, 2)}¢`;
  const tenths = Math.round(c * 10);
  if (tenths < 1000) return `${fixed(tenths, 1)}¢`;
  return `$${fixed(Math.round(c), 2)}`;
}

/** n / 10^places with that many decimals, from an integral n. */
function fixed(n, places) {
  const div = 10 ** places;
  return `${Math.floor(n / div)}.${String(n % div).padStart(places, '0')}`;
}

/**
 * What a run, a session or a roll-up spent: "0¢" when it used nothing;
 * "unpriced" when it used tokens and nothing of it is priced (the
 * stream's CostUpdate says so with unpriced; tokens that cost nothing are
 * read the same way, as the caps do); "1.20¢ + unpriced" when some is.
 */
export function cost(c, tokenCount, unpriced = false) {
  const priced = c > 0;
  const used = (tokenCount || 0) > 0;
  if (!priced && !used) return cents(0);
  if (!unpriced && (priced || !used)) return cents(c);
  return priced ? `${cents(c)} + unpriced` : 'unpriced';
}

/** A roll-up's total: cost(), unpriced in part when any model in it is. */
export function totalCost(total, byModel = []) {
  const some = byModel.some((m) => cost(m.costCents, m.tokens) === 'unpriced');
  return cost(total.costCents, total.tokens, some);
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
