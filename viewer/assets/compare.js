// Two runs side by side (#/compare?a=ID&b=ID): two rollouts by task and
// sample (score differences, samples that turned correct or incorrect),
// any other two runs by their transcripts aligned by step — a fork and
// its parent from the fork step, with the steps they share shown once.

import {api} from './api.js';
import {h, fill, fmtNum, badge} from './dom.js';
import {Transcript} from './transcript.js';
import {Samples, key} from './samples.js';
import {VTable} from './rollout.js';

const enc = encodeURIComponent;
const MAX_ENTRIES = 5000; // per run, for the transcripts

function runCard(r, side) {
  return h('div.cmp-run.card#cmp-' + side, {dataset: {run: r.id}},
    h('div', h('b', side.toUpperCase() + ' '), h('a.mono', {href: '#/runs/' + enc(r.id)}, r.id), ' ', badge(r.status)),
    h('div.muted', r.workflow + (r.end_reason ? ' · ' + r.end_reason : '') + (r.forked_from ? ` · fork of ${r.forked_from.run} at step ${r.forked_from.step}` : '')),
    r.task ? h('div.text', r.task) : null,
    h('div.muted.small', `${fmtNum(r.usage.tokens)} tokens · step ${r.step} · ${fmtNum(r.entries)} entries`));
}

export class ComparePage {
  constructor(a, b, signal) {
    this.a = a;
    this.b = b;
    this.signal = signal;
  }

  async start(app) {
    this.app = app;
    if (!this.a || !this.b) {
      fill(app, h('h1', 'Compare'), h('p.muted', 'Pick two runs in the runs list (the boxes beside their ids), or open #/compare?a=RUN&b=RUN.'));
      return;
    }
    const [a, b] = await Promise.all([api('/runs/' + enc(this.a), {signal: this.signal}), api('/runs/' + enc(this.b), {signal: this.signal})]);
    this.body = h('div#compare-body', h('p.muted', 'Loading…'));
    fill(app, h('h1', 'Compare'), h('div.cmp-heads', runCard(a, 'a'), runCard(b, 'b')),
      h('p', h('a#cmp-swap', {href: `#/compare?a=${enc(b.id)}&b=${enc(a.id)}`}, '⇄ swap')), this.body);
    if (a.workflow === 'rollout' && b.workflow === 'rollout') await this.rollouts(a, b);
    else await this.transcripts(a, b);
  }

  // rollouts compares two rollouts' samples.
  async rollouts(a, b) {
    const bench = r => r.result && typeof r.result === 'object' ? r.result.benchmark_name : '';
    if (bench(a) && bench(b) && bench(a) !== bench(b)) {
      this.body.before(h('p.warn#cmp-bench', `These rollouts ran different benchmarks (${bench(a)} and ${bench(b)}): tasks are matched by id.`));
    }
    const sa = new Samples(a.id, this.signal), sb = new Samples(b.id, this.signal);
    await Promise.all([sa.refresh(a, () => {}), sb.refresh(b, () => {})]);
    const byA = new Map(sa.rows.map(r => [key(r), r]));
    const tasks = new Map();
    const task = (r, side) => {
      let t = tasks.get(r.task_id);
      if (!t) tasks.set(r.task_id, t = {id: r.task_id, index: r.task_index, question: r.question, a: {n: 0, sum: 0, c: 0}, b: {n: 0, sum: 0, c: 0}});
      if (!r.graded) return;
      const x = t[side];
      x.n++; x.sum += r.primary; if (r.correct && !r.failed) x.c++;
    };
    for (const r of sa.rows) task(r, 'a');
    for (const r of sb.rows) task(r, 'b');
    const fixed = [], broke = [];
    for (const rb of sb.rows) {
      const ra = byA.get(key(rb));
      if (!ra || !ra.graded || !rb.graded) continue;
      const ca = ra.correct && !ra.failed, cb = rb.correct && !rb.failed;
      if (ca && !cb) broke.push([ra, rb]);
      if (!ca && cb) fixed.push([ra, rb]);
    }
    const mean = x => x.n ? x.sum / x.n : null;
    const list = [...tasks.values()].map(t => Object.assign(t, {ma: mean(t.a), mb: mean(t.b)}));
    for (const t of list) t.diff = t.ma != null && t.mb != null ? t.mb - t.ma : null;
    const fmt = v => v == null ? '—' : (Math.round(v * 1000) / 1000).toString();
    const cols = [
      {key: 'task', label: 'Task', width: 'minmax(80px, 0.8fr)', cell: t => t.id, sort: t => t.index ?? t.id},
      {key: 'question', label: 'Question', width: 'minmax(160px, 3fr)', cell: t => t.question || '', sort: t => t.question},
      {key: 'a', label: 'A score', width: '80px', num: true, cell: t => fmt(t.ma), sort: t => t.ma},
      {key: 'b', label: 'B score', width: '80px', num: true, cell: t => fmt(t.mb), sort: t => t.mb},
      {key: 'diff', label: 'B − A', width: '80px', num: true, cls: 'diff', cell: t => t.diff == null ? '—' : h(t.diff > 0 ? 'span.ok' : t.diff < 0 ? 'span.bad' : 'span', (t.diff > 0 ? '+' : '') + fmt(t.diff)), sort: t => t.diff},
      {key: 'ca', label: 'A correct', width: '80px', num: true, cell: t => `${t.a.c}/${t.a.n}`, sort: t => t.a.n ? t.a.c / t.a.n : null},
      {key: 'cb', label: 'B correct', width: '80px', num: true, cell: t => `${t.b.c}/${t.b.n}`, sort: t => t.b.n ? t.b.c / t.b.n : null},
    ];
    const table = new VTable({columns: cols, id: 'cmp-tasks', href: () => null, empty: 'No task differs.'});
    const only = h('input#cmp-changed', {type: 'checkbox', checked: true});
    const draw = () => {
      const rows = list.filter(t => !only.checked || t.diff !== 0);
      for (const t of rows) t.dataset = {task: t.id, diff: t.diff == null ? '' : fmt(t.diff)};
      table.setRows(table.sorted(rows));
    };
    table.onSort = draw;
    only.addEventListener('change', draw);
    table.sort = {key: 'diff', dir: 1};
    const pair = ([ra, rb]) => h('li', {dataset: {key: ra.task_id + '/' + ra.chain}},
      h('b', ra.task_id), ` chain ${ra.chain}: `,
      h('a', {href: '#/runs/' + enc(ra.run_id)}, `A “${clip(ra.predicted_answer)}”`), ' → ',
      h('a', {href: '#/runs/' + enc(rb.run_id)}, `B “${clip(rb.predicted_answer)}”`),
      h('span.muted', ` (references: ${ra.refs})`));
    const meanAll = rows => { const g = rows.filter(r => r.graded); return g.length ? g.reduce((s, r) => s + r.primary, 0) / g.length : 0; };
    fill(this.body,
      h('div.cards',
        h('div.scard', h('div.scard-title', 'Mean score'), h('div.big#cmp-means', `${meanAll(sa.rows).toFixed(3)} → ${meanAll(sb.rows).toFixed(3)}`),
          h('div.muted', `${fmtNum(sa.rows.length)} and ${fmtNum(sb.rows.length)} samples`)),
        h('div.scard', h('div.scard-title', 'Correct → incorrect'), h('div.big.bad#cmp-broke-n', String(broke.length))),
        h('div.scard', h('div.scard-title', 'Incorrect → correct'), h('div.big.ok#cmp-fixed-n', String(fixed.length)))),
      h('section.card', h('h3', 'Per task'), h('label', only, ' only tasks whose score differs'), table.viewport),
      h('div.cmp-cols',
        h('section.card', h('h3', `Correct → incorrect (${broke.length})`), h('ul#cmp-broke', broke.map(pair))),
        h('section.card', h('h3', `Incorrect → correct (${fixed.length})`), h('ul#cmp-fixed', fixed.map(pair)))));
    draw();
  }

  // transcripts shows both runs' entries side by side, one row per step;
  // a fork and its origin share the steps up to the fork, shown once.
  async transcripts(a, b) {
    const read = async id => {
      const out = [];
      for (let after = 0; out.length < MAX_ENTRIES;) {
        const res = await api(`/runs/${enc(id)}/entries?limit=1000&after=${after}`, {signal: this.signal});
        out.push(...res.entries);
        if (!res.next) break;
        after = Number(res.next);
      }
      return out;
    };
    const [ea, eb] = await Promise.all([read(a.id), read(b.id)]);
    let shared = 0, forkA = true;
    if (b.forked_from && b.forked_from.run === a.id) shared = b.forked_from.step;
    else if (a.forked_from && a.forked_from.run === b.id) { shared = a.forked_from.step; forkA = false; }
    // The fork copied its origin's entries up to the fork step: those
    // (the first n of both logs) are shown once; what either run has
    // after them (the fork's injected message, then each run's own
    // steps) is shown side by side, one row per step.
    const origin = forkA ? ea : eb;
    const n = shared ? origin.filter(e => (e.step || 0) <= shared).length : 0;
    const byStep = es => {
      const m = new Map();
      for (const e of es) {
        const s = e.step || 0;
        (m.get(s) || m.set(s, []).get(s)).push(e);
      }
      return m;
    };
    const sa = byStep(ea.slice(n)), sb = byStep(eb.slice(n));
    const steps = [...new Set([...sa.keys(), ...sb.keys()])].sort((x, y) => x - y);
    const ta = new Transcript(h('div')), tb = new Transcript(h('div'));
    let head = null;
    if (shared) {
      const prefix = ea.slice(0, n);
      tb.into(h('div'), eb.slice(0, n)); // b's annotations
      head = h('details#cmp-shared', h('summary', `${n} entries shared up to step ${shared} (the fork step)`),
        ta.into(h('div.transcript'), prefix));
    }
    const rows = steps.map(s => h('div.cmp-step', {dataset: {step: String(s)}},
      h('div.cmp-stepno', 'step ' + s + (shared && s <= shared ? ' (the fork)' : '')),
      ta.into(h('div.cmp-cell.transcript', {dataset: {side: 'a'}}), sa.get(s) || []),
      tb.into(h('div.cmp-cell.transcript', {dataset: {side: 'b'}}), sb.get(s) || [])));
    fill(this.body, head,
      h('div.cmp-step.cmp-hdr', h('div'), h('div', 'A'), h('div', 'B')),
      h('div#cmp-steps', rows.length ? rows : h('p.muted', 'No entries.')),
      ea.length >= MAX_ENTRIES || eb.length >= MAX_ENTRIES ? h('p.muted', `Only the first ${MAX_ENTRIES} entries of each run are shown.`) : null);
  }
}

const clip = t => { t = t == null ? '' : String(t); return t.length > 40 ? t.slice(0, 39) + '…' : t; };
