// A rollout run's page section: summary cards (samples, mean score per
// scorer, pass@k over k, a score histogram, failures by end reason) and
// the samples in a sortable, filterable, searchable table that renders
// only the rows in view, so that 10,000 samples open as fast as 10.

import {terminal} from './api.js';
import {h, fill, fmtNum, fmtDur} from './dom.js';
import {lineChart, barChart, meter} from './charts.js';
import {Samples, stats, scorers, scoreOf} from './samples.js';

const ROW = 30;      // px, one table row (style.css .vt-row)
const OVERSCAN = 8;  // rows rendered above and below the view

// VTable is a table of many rows of which only those in view are in the
// DOM: a scrolling viewport, a sticky header and a body as tall as all
// rows, with the visible ones placed absolutely.
export class VTable {
  constructor({columns, id, href, empty = 'No rows.'}) {
    this.columns = columns;
    this.href = href;
    this.empty = empty;
    this.rows = [];
    this.sort = null;      // {key, dir}
    this.onSort = null;
    this.head = h('div.vt-head', columns.map(c => h('div.vt-cell.vt-h' + (c.num ? '.num' : ''),
      {dataset: {col: c.key}, title: c.title || c.label, onclick: () => this.toggleSort(c)}, c.label, h('span.vt-sort'))));
    this.body = h('div.vt-body');
    this.viewport = h('div.vt' + (id ? '#' + id : ''), this.head, this.body);
    this.viewport.style.setProperty('--cols', columns.map(c => c.width || '1fr').join(' '));
    this.viewport.addEventListener('scroll', () => this.schedule(), {passive: true});
    this.frame = 0;
    // The viewport's height, kept by an observer so that drawing never
    // forces a layout (560 px until it is first laid out, as style.css).
    this.height = 560;
    new ResizeObserver(es => {
      const hgt = es[es.length - 1].contentRect.height;
      if (hgt && hgt !== this.height) { this.height = hgt; this.schedule(); }
    }).observe(this.viewport);
  }

  toggleSort(c) {
    if (!c.sort) return;
    const dir = this.sort && this.sort.key === c.key && this.sort.dir === 1 ? -1 : 1;
    this.sort = {key: c.key, dir};
    for (const el of this.head.children) el.dataset.sorted = el.dataset.col === c.key ? (dir > 0 ? 'asc' : 'desc') : '';
    if (this.onSort) this.onSort();
  }

  // sorted returns rows sorted by the current sort column (stable).
  sorted(rows) {
    if (!this.sort) return rows;
    const c = this.columns.find(c => c.key === this.sort.key);
    const dir = this.sort.dir;
    const keyed = rows.map((r, i) => [c.sort(r), i, r]);
    keyed.sort((a, b) => {
      const x = a[0], y = b[0];
      if (x === y) return a[1] - b[1];
      if (x == null) return 1;
      if (y == null) return -1;
      return (x < y ? -1 : 1) * dir;
    });
    return keyed.map(k => k[2]);
  }

  setRows(rows) {
    this.rows = rows;
    this.body.style.height = Math.max(ROW, rows.length * ROW) + 'px';
    // As tall as its rows, up to 560 px (then it scrolls).
    this.viewport.style.height = Math.min(560, (Math.max(1, rows.length) + 1) * ROW + 6) + 'px';
    this.drawn = null;
    this.draw();
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.draw(); });
  }

  // draw puts the rows in view (and a few around them) in the body.
  draw() {
    const top = Math.max(0, this.viewport.scrollTop - ROW);
    const height = this.height;
    const from = Math.max(0, Math.floor(top / ROW) - OVERSCAN);
    const to = Math.min(this.rows.length, Math.ceil((top + height) / ROW) + OVERSCAN);
    const span = from + ':' + to;
    if (this.drawn === span) return;
    this.drawn = span;
    const frag = document.createDocumentFragment();
    for (let i = from; i < to; i++) frag.append(this.row(this.rows[i], i));
    if (!this.rows.length) frag.append(h('div.vt-empty.muted', this.empty));
    this.body.replaceChildren(frag);
  }

  row(r, i) {
    const href = this.href(r);
    const el = h(href ? 'a.vt-row' : 'div.vt-row', {href, dataset: r.dataset || {}},
      this.columns.map(c => {
        const v = c.cell(r);
        return h('div.vt-cell' + (c.num ? '.num' : '') + (c.cls ? '.' + c.cls : ''), {dataset: {col: c.key}, title: c.tip ? c.tip(r) : (typeof v === 'string' ? v : null)}, v);
      }));
    el.style.top = (i * ROW) + 'px';
    return el;
  }
}

// summaryStats is what the cards show from a rollout's summary (its
// result) while its rows are being read.
function summaryStats(r) {
  const n = r.samples || 0;
  return {samples: r.finished_samples ?? n, graded: n, correct: r.correct || 0, failed: r.failed || 0, notEvaluated: r.not_evaluated || 0,
    evalErrors: (r.errors || {}).eval_error || 0, tokens: r.tokens || 0, cost: r.cost || 0,
    seconds: (r.mean_agent_seconds || 0) * (r.finished_samples ?? n), tasks: r.tasks || 0, mean: r.mean_score || 0,
    means: Object.entries(r.score_means || {}).sort().map(([name, mean]) => ({name, mean})),
    passAtK: r.pass_at_k || [], failedBy: Object.entries(r.failed_by || {}).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)), hist: null};
}

const clip = (t, n = 160) => { t = t == null ? '' : String(t); return t.length > n ? t.slice(0, n - 1) + '…' : t; };
const num = v => v == null ? '' : (Math.round(v * 1000) / 1000).toString();

// RolloutView is the samples section of a rollout run's page.
export class RolloutView {
  constructor(id, signal) {
    this.id = id;
    this.samples = new Samples(id, signal);
    this.el = h('section#samples.card');
    this.pending = 0;
    this.marked = false;
    // firstScreen resolves once the first samples are on screen.
    this.firstScreen = new Promise(resolve => { this.shown = resolve; });
  }

  // start reads the rollout's rows and shows them; the first small page
  // is on screen before the rest is read.
  async start(head) {
    this.head = head;
    // Every row comes after every task entry (the load step appends the
    // tasks first), so the read may start past as many entries as the
    // rollout has tasks (its var "rollout").
    const tasks = head.vars && head.vars.rollout && head.vars.rollout.tasks;
    if (Number.isInteger(tasks) && tasks > 0) this.samples.own.after = tasks;
    this.build();
    // The first page is drawn at once, the rest once a frame.
    let pages = 0;
    await this.samples.load(() => this.update(pages++ === 0), 100);
    this.complete = true;
    this.update(true);
    this.shown();
    performance.mark('flock:samples-all');
    if (!terminal(head.status)) await this.refresh(head);
  }

  async refresh(head) {
    this.head = head;
    if (this.refreshing) return;
    this.refreshing = true;
    try { await this.samples.refresh(head, () => this.update()); } finally { this.refreshing = false; }
    this.update(true);
  }

  build() {
    this.cards = h('div.cards#s-cards');
    this.count = h('span#s-count.muted');
    this.filter = h('select#s-filter', ['all', 'correct', 'incorrect', 'failed', 'not evaluated'].map(v => h('option', {value: v}, v === 'all' ? 'all samples' : v)));
    this.task = h('input#s-task', {placeholder: 'task id', size: 12});
    this.search = h('input#s-search', {type: 'search', placeholder: 'search question, answer, references', size: 32});
    for (const el of [this.filter, this.task, this.search]) el.addEventListener('input', () => this.update(true));
    this.columnsFor([]);
    fill(this.el, h('h3', 'Samples'), this.cards,
      h('div.filters', this.filter, this.task, this.search, this.count), this.tableBox = h('div'));
    this.tableBox.append(this.table.viewport);
  }

  // columnsFor builds the table for the scorers of rows (one column each).
  columnsFor(names) {
    const key = names.join(',');
    if (this.table && this.scorerKey === key) return;
    this.scorerKey = key;
    const taskCell = r => h('span', h('span.task-filter', {title: 'show only this task', onclick: ev => {
      ev.preventDefault(); ev.stopPropagation(); this.task.value = r.task_id; this.update(true);
    }}, r.task_id));
    const cols = [
      {key: 'task', label: 'Task', width: 'minmax(70px, 0.7fr)', cell: taskCell, tip: r => r.task_id, sort: r => r.task_index ?? r.task_id},
      {key: 'chain', label: 'Chain', width: '52px', num: true, cell: r => String(r.chain), sort: r => r.chain},
      {key: 'question', label: 'Question', width: 'minmax(160px, 2.4fr)', cell: r => clip(r.question), tip: r => clip(r.question, 2000), sort: r => r.question},
      {key: 'answer', label: 'Answer', width: 'minmax(80px, 1fr)', cell: r => clip(r.predicted_answer, 80), tip: r => clip(r.predicted_answer, 2000), sort: r => r.predicted_answer},
      {key: 'refs', label: 'References', width: 'minmax(80px, 1fr)', cell: r => clip(r.refs, 80), tip: r => r.refs, sort: r => r.refs},
      ...names.map(n => ({key: 'score:' + n, label: n, title: 'score: ' + n, width: 'minmax(60px, 0.5fr)', num: true,
        cell: r => num(scoreOf(r, n)), sort: r => scoreOf(r, n)})),
      {key: 'correct', label: 'Correct', width: '64px', cls: 'center',
        cell: r => !r.graded ? h('span.muted', '—') : r.correct && !r.failed ? h('span.ok', '✓') : h('span.bad', '✗'),
        sort: r => r.graded ? (r.correct && !r.failed ? 1 : 0) : -1},
      {key: 'reason', label: 'End reason', width: 'minmax(90px, 0.8fr)', cell: r => r.failed ? h('span.bad', r.reason) : (r.reason || r.status || ''),
        tip: r => r.error || r.eval_error || r.reason, sort: r => r.reason},
      {key: 'tokens', label: 'Tokens', width: '76px', num: true, cell: r => fmtNum(r.tokens), sort: r => r.tokens},
      {key: 'time', label: 'Time', width: '70px', num: true, cell: r => fmtDur((r.seconds || 0) * 1000), sort: r => r.seconds},
    ];
    const old = this.table;
    this.table = new VTable({columns: cols, id: 's-table', href: r => r.run_id ? '#/runs/' + encodeURIComponent(r.run_id) : null, empty: 'No samples match.'});
    this.table.onSort = () => this.update(true);
    if (old) old.viewport.replaceWith(this.table.viewport);
  }

  // update redraws at most once a frame; now redraws at once.
  update(now) {
    if (now) { cancelAnimationFrame(this.pending); this.pending = 0; this.draw(); return; }
    if (this.pending) return;
    this.pending = requestAnimationFrame(() => { this.pending = 0; this.draw(); });
  }

  draw() {
    const all = this.samples.rows;
    this.columnsFor(scorers(all));
    const f = this.filter.value, task = this.task.value.trim(), q = this.search.value.trim().toLowerCase();
    const rows = all.filter(r => (f === 'all' ||
        (f === 'correct' && r.graded && r.correct && !r.failed) ||
        (f === 'incorrect' && r.graded && !r.failed && !r.correct) ||
        (f === 'failed' && r.failed) ||
        (f === 'not evaluated' && !r.graded)) &&
      (!task || r.task_id === task) && (!q || r.hay.includes(q)));
    for (const r of rows) r.dataset = {key: r.task_id + '/' + r.chain, task: r.task_id, correct: String(!!(r.correct && !r.failed)), failed: String(r.failed)};
    // Unsorted, the samples are in task order, then by chain (as the
    // results file), whatever order their lanes finished in.
    if (!this.table.sort) rows.sort((a, b) => (a.task_index ?? 0) - (b.task_index ?? 0) || a.chain - b.chain);
    this.table.setRows(this.table.sorted(rows));
    // The samples planned: the summary's, or while it runs its var's.
    const hd = this.head || {};
    const total = (hd.result && hd.result.total_samples) || (hd.vars && hd.vars.rollout && hd.vars.rollout.samples);
    this.count.textContent = `${fmtNum(rows.length)} of ${fmtNum(all.length)} samples` + (total && total !== all.length ? ` (${fmtNum(total)} planned)` : '');
    this.count.dataset.shown = String(rows.length);
    this.count.dataset.total = String(all.length);
    // Until every row is read, a finished rollout's cards come from its
    // summary (the run's result), which has all but the histogram.
    const partial = !this.complete;
    const summary = this.head && this.head.result && typeof this.head.result === 'object' && this.head.result.mean_score != null ? this.head.result : null;
    const version = this.samples.version + (partial ? '~' : '');
    if (this.statsVersion !== version && !(partial && summary && this.statsVersion === 'summary')) {
      this.statsVersion = partial && summary ? 'summary' : version;
      this.drawCards(partial && summary ? summaryStats(summary) : stats(all), partial);
    }
    if (!this.marked && all.length) {
      this.marked = true;
      performance.mark('flock:samples-rendered');
      this.shown();
    }
  }

  drawCards(st, partial) {
    this.cards.dataset.complete = String(!partial);
    const pct = v => (100 * v).toFixed(1) + '%';
    const card = (id, title, ...body) => h('div.scard#' + id, h('div.scard-title', title), ...body);
    fill(this.cards,
      card('c-samples', 'Samples',
        h('div.big', fmtNum(st.samples)),
        h('dl.kv.small',
          h('dt', 'tasks'), h('dd', fmtNum(st.tasks)),
          h('dt', 'correct'), h('dd', {dataset: {v: String(st.correct)}}, `${fmtNum(st.correct)} (${st.graded ? pct(st.correct / st.graded) : '—'})`),
          h('dt', 'failed'), h('dd', {dataset: {v: String(st.failed)}}, fmtNum(st.failed)),
          st.notEvaluated ? [h('dt', 'not graded'), h('dd', fmtNum(st.notEvaluated))] : null,
          st.evalErrors ? [h('dt', 'eval errors'), h('dd', fmtNum(st.evalErrors))] : null,
          h('dt', 'tokens'), h('dd', fmtNum(st.tokens)),
          st.cost ? [h('dt', 'cost'), h('dd', '$' + st.cost.toFixed(4))] : null,
          h('dt', 'mean time'), h('dd', fmtDur(st.samples ? 1000 * st.seconds / st.samples : 0)))),
      card('c-means', 'Mean score',
        h('div.big', {dataset: {v: st.mean.toFixed(4)}}, st.mean.toFixed(3)),
        h('div.means', st.means.map(m => h('div.mean-row', {dataset: {scorer: m.name, v: m.mean.toFixed(4)}},
          h('span', m.name), h('span.num', m.mean.toFixed(3)), meter(m.mean))))),
      card('c-passk', 'pass@k', st.passAtK.length ? lineChart(st.passAtK, {xLabel: i => 'k=' + (i + 1)}) : h('p.muted', 'no graded samples')),
      card('c-hist', 'Score histogram', !st.hist ? h('p.muted', 'reading the samples…') :
        st.graded ? barChart(st.hist.counts, {lo: st.hist.lo, hi: st.hist.hi}) : h('p.muted', 'no graded samples')),
      card('c-fail', 'Failures by end reason',
        st.failedBy.length ? h('div.means', st.failedBy.map(([reason, n]) => h('div.mean-row', {dataset: {reason, n: String(n)}},
          h('span.bad', reason), h('span.num', fmtNum(n)), meter(n / st.failed, 'hot')))) : h('p.muted', 'none')));
  }
}
