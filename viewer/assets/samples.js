// A rollout's samples: the "row" entries (phases/rollout Row) of the
// rollout run and, while it runs, of its lanes, read through
// GET /runs/ID/entries?type=row page by page; and what the summary cards
// show, computed from them.

import {api, terminal} from './api.js';

const enc = encodeURIComponent;

// key names a sample: its task and chain.
export const key = r => r.task_id + '\u0000' + r.chain;

// entryPages yields the data of run id's entries of the given types, a
// page at a time, after seq after; it ends at the end of the log. state,
// when given, keeps the cursor so that a later call goes on from it.
export async function* entryPages(id, types, {signal, first = 1000, state = {after: 0}} = {}) {
  let limit = first;
  for (;;) {
    const res = await api(`/runs/${enc(id)}/entries?type=${enc(types)}&limit=${limit}&after=${state.after}`, {signal});
    if (res.entries.length) state.after = res.entries[res.entries.length - 1].seq;
    if (res.next) state.after = Math.max(state.after, Number(res.next));
    yield res.entries;
    if (!res.next) return;
    limit = 1000;
  }
}

// Samples holds a rollout's rows, one per sample (a later row of the same
// sample replaces the earlier), and reads new ones from the rollout and,
// while it runs, its lanes.
export class Samples {
  constructor(id, signal) {
    this.id = id;
    this.signal = signal;
    this.rows = [];
    this.index = new Map(); // key -> position in rows
    this.own = {after: 0};  // the rollout's own entries read so far
    this.lanes = new Map(); // lane id -> {after, done}
    this.version = 0;       // bumped by every change
  }

  add(entries) {
    for (const e of entries) {
      const r = e.data;
      if (!r || typeof r !== 'object' || r.task_id == null) continue;
      const k = key(r);
      const i = this.index.get(k);
      if (i === undefined) { this.index.set(k, this.rows.length); this.rows.push(prepare(r)); }
      else this.rows[i] = prepare(r);
    }
    if (entries.length) this.version++;
  }

  // load reads the rollout's own rows to the end, calling onPage after
  // each page (the first one small, for a fast first screen).
  async load(onPage, first = 300) {
    for await (const page of entryPages(this.id, 'row', {signal: this.signal, first, state: this.own})) {
      this.add(page);
      onPage();
    }
  }

  // refresh reads what is new: the rollout's own rows and, unless the
  // rollout has ended, the rows of its lanes (whose rows reach the
  // rollout only when they end).
  async refresh(head, onPage) {
    await this.load(onPage, 1000);
    if (terminal(head.status)) return;
    let after = '';
    for (;;) {
      const res = await api(`/runs?parent_id=${enc(this.id)}&limit=1000` + (after ? '&after=' + enc(after) : ''), {signal: this.signal});
      for (const lane of res.runs) {
        const st = this.lanes.get(lane.id) || {after: 0, done: false};
        this.lanes.set(lane.id, st);
        if (st.done) continue;
        for await (const page of entryPages(lane.id, 'row', {signal: this.signal, state: st})) {
          this.add(page);
          onPage();
        }
        st.done = terminal(lane.status);
      }
      if (!res.next) break;
      after = res.next;
    }
  }
}

// prepare adds what the table and filters read often to a row.
function prepare(r) {
  r.refs = (r.ground_truth || []).join(' | ');
  r.graded = !!r.evaluated || !r.success;
  r.failed = !r.success;
  r.primary = r.success ? (r.score || 0) : 0;
  r.reason = r.end_reason || (r.success ? '' : 'agent_failed');
  r.hay = [r.task_id, r.question, r.predicted_answer, r.refs, r.reason].join('\n').toLowerCase();
  return r;
}

// scorers names the scores of the rows: every key of their scores maps,
// else the metric of the first evaluated row.
export function scorers(rows) {
  const names = new Set();
  for (const r of rows) for (const k of Object.keys(r.scores || {})) names.add(k);
  if (names.size) return [...names].sort();
  const first = rows.find(r => r.evaluated && r.metric);
  return [first ? first.metric : 'score'];
}

// scoreOf is row r's score by scorer name (its primary score when it has
// no scores map), or null when it has none.
export function scoreOf(r, name) {
  if (r.scores && name in r.scores) return r.scores[name];
  if (!r.scores && r.graded) return r.primary;
  return null;
}

// passAtK is the unbiased estimator of pass@k for n samples of which c
// were correct (grading.PassAtK).
export function passAtK(n, c, k) {
  if (n - c < k) return 1;
  let prod = 1;
  for (let i = n - c + 1; i <= n; i++) prod *= 1 - k / i;
  return 1 - prod;
}

// stats is what the summary cards show, as the rollout's summary counts
// it (grading.Summarize): graded samples are the evaluated and the failed
// ones, failures score 0, pass@k for k up to the fewest samples of a task.
export function stats(rows) {
  const s = {samples: rows.length, graded: 0, correct: 0, failed: 0, notEvaluated: 0, evalErrors: 0,
    tokens: 0, cost: 0, seconds: 0, mean: 0, means: [], passAtK: [], failedBy: [], hist: null};
  const tasks = new Map();
  let total = 0;
  const scores = [];
  const failedBy = new Map();
  for (const r of rows) {
    s.tokens += r.tokens || 0;
    s.cost += r.cost || 0;
    s.seconds += r.agent_seconds || 0;
    if (r.eval_error) s.evalErrors++;
    if (!r.graded) { s.notEvaluated++; continue; }
    s.graded++;
    let t = tasks.get(r.task_id);
    if (!t) tasks.set(r.task_id, t = {n: 0, c: 0});
    t.n++;
    scores.push(r.primary);
    total += r.primary;
    if (r.failed) {
      s.failed++;
      failedBy.set(r.reason, (failedBy.get(r.reason) || 0) + 1);
    } else if (r.correct) { s.correct++; t.c++; }
  }
  s.tasks = tasks.size;
  s.mean = s.graded ? total / s.graded : 0;
  for (const name of scorers(rows)) {
    let sum = 0, n = 0;
    for (const r of rows) {
      const v = scoreOf(r, name);
      if (v == null) continue;
      sum += v; n++;
    }
    s.means.push({name, mean: n ? sum / n : 0, n});
  }
  const minN = Math.min(...[...tasks.values()].map(t => t.n));
  for (let k = 1; tasks.size && k <= minN; k++) {
    let sum = 0;
    for (const t of tasks.values()) sum += passAtK(t.n, t.c, k);
    s.passAtK.push(sum / tasks.size);
  }
  s.failedBy = [...failedBy.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  s.hist = histogram(scores, 10);
  return s;
}

// histogram counts values in bins equal parts of [0, 1] (or of their
// range, when some lie outside it).
export function histogram(values, bins) {
  let lo = 0, hi = 1;
  for (const v of values) { if (v < lo) lo = v; if (v > hi) hi = v; }
  const counts = new Array(bins).fill(0);
  const w = (hi - lo) / bins;
  for (const v of values) counts[Math.min(bins - 1, Math.max(0, Math.floor((v - lo) / w)))]++;
  return {lo, hi, counts};
}
