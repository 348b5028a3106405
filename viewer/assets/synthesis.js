// The synthesis pages: a synthesis run's kept and rejected QA pairs and
// its seeds, and a seed run's trajectory tree drawn with the selected
// paths marked (phases/synthesis: a seed run's "node", "ended",
// "selection", "qa" and "qa_rejected" entries).

import {api} from './api.js';
import {h, fill, fold, badge} from './dom.js';
import {s} from './charts.js';
import {entryPages} from './samples.js';

const enc = encodeURIComponent;
const SEED_TYPES = 'node,ended,selection,qa,qa_rejected';
const clip = (t, n) => { t = t == null ? '' : String(t).replace(/\s+/g, ' ').trim(); return t.length > n ? t.slice(0, n - 1) + '…' : t; };

// readSeed reads what a seed run recorded: its tree's nodes, the children
// not grown, the selected paths, the QA pairs kept and rejected.
export async function readSeed(id, signal, types = SEED_TYPES) {
  const seed = {id, nodes: [], ended: [], selection: null, qa: [], rejected: []};
  for await (const page of entryPages(id, types, {signal})) {
    for (const e of page) {
      const d = e.data;
      if (e.type === 'node') seed.nodes.push(d);
      else if (e.type === 'ended') seed.ended.push(d);
      else if (e.type === 'selection') seed.selection = d;
      else if (e.type === 'qa') seed.qa.push(d);
      else if (e.type === 'qa_rejected') seed.rejected.push(d);
    }
  }
  return seed;
}

// qaCard shows a kept QA pair: question, answer, each hop with its
// evidence, the checks it passed.
export function qaCard(q, seedID) {
  return h('div.qa', {dataset: {qa: q.qa_id || '', trajectory: q.trajectory_id || ''}},
    h('div.qa-q', q.question),
    h('div.qa-a', h('span.muted', 'answer '), h('b', q.answer)),
    h('ol.hops', (q.reasoning_steps || []).map(s => h('li.hop',
      h('div', s.fact), s.evidence ? h('blockquote.evidence', s.evidence) : null,
      s.output ? h('div.muted.small', '→ ' + s.output) : null))),
    h('div.checks', (q.checks_passed || []).map(c => h('span.check', '✓ ' + c)),
      h('span.muted.small', ` ${q.trajectory_id || ''}` + (q.attempts > 1 ? ` · ${q.attempts} attempts` : '') +
        (q.metadata && q.metadata.score != null ? ` · path score ${Number(q.metadata.score).toFixed(3)}` : '')),
      seedID ? [' ', h('a.small', {href: '#/runs/' + enc(seedID)}, 'seed run')] : null));
}

export function rejectedCard(r, seedID) {
  return h('div.qa.rejected', {dataset: {trajectory: r.trajectory_id || '', check: r.check || ''}},
    h('div', h('span.check.failed', '✗ ' + r.check), ' ', h('span.muted.small', `${r.trajectory_id} · ${r.attempts} attempts`),
      seedID ? [' ', h('a.small', {href: '#/runs/' + enc(seedID)}, 'seed run')] : null),
    h('div.text', r.reason));
}

// TreeView draws a seed's trajectory tree: a node per tool call with its
// tool and the start of its observation, the selected paths marked; a
// click on a node shows all of it.
export class TreeView {
  constructor(seed) {
    this.seed = seed;
    this.detail = h('div.node-detail.muted', 'Click a node to see its full observation.');
    this.el = h('div.tree-view', h('div.tree-scroll', this.draw()), this.paths(), this.detail);
  }

  // selected returns the ids of the nodes and edges on selected paths.
  selected() {
    const nodes = new Set(), edges = new Set();
    for (const p of (this.seed.selection && this.seed.selection.paths) || []) {
      let prev = '0';
      nodes.add('0');
      for (const n of (p.path && p.path.nodes) || []) {
        nodes.add(n.node_id);
        edges.add(prev + '>' + n.node_id);
        prev = n.node_id;
      }
    }
    return {nodes, edges};
  }

  draw() {
    const W = 172, H = 46, GX = 12, GY = 34, PAD = 8;
    const byID = new Map(this.seed.nodes.map(n => [n.node_id, n]));
    const kids = new Map();
    for (const n of this.seed.nodes) {
      if (n.parent_id == null || n.parent_id === '' || !byID.has(n.parent_id)) continue;
      (kids.get(n.parent_id) || kids.set(n.parent_id, []).get(n.parent_id)).push(n.node_id);
    }
    const pos = new Map();
    let leaf = 0, maxDepth = 0;
    const place = (id, depth) => {
      maxDepth = Math.max(maxDepth, depth);
      const cs = kids.get(id) || [];
      let x;
      if (!cs.length) x = leaf++;
      else {
        const xs = cs.map(c => place(c, depth + 1));
        x = (xs[0] + xs[xs.length - 1]) / 2;
      }
      pos.set(id, {x, depth});
      return x;
    };
    const roots = this.seed.nodes.filter(n => !n.parent_id || !byID.has(n.parent_id));
    for (const r of roots) place(r.node_id, 0);
    const sel = this.selected();
    const px = p => PAD + p.x * (W + GX), py = p => PAD + p.depth * (H + GY);
    const width = PAD * 2 + Math.max(1, leaf) * (W + GX) - GX, height = PAD * 2 + (maxDepth + 1) * (H + GY) - GY;
    const edges = [];
    for (const [parent, cs] of kids) for (const c of cs) {
      const a = pos.get(parent), b = pos.get(c);
      const x1 = px(a) + W / 2, y1 = py(a) + H, x2 = px(b) + W / 2, y2 = py(b);
      edges.push(s('path', {class: 'tedge' + (sel.edges.has(parent + '>' + c) ? ' sel' : ''),
        d: `M ${x1} ${y1} C ${x1} ${y1 + GY / 2}, ${x2} ${y2 - GY / 2}, ${x2} ${y2}`}));
    }
    const nodes = this.seed.nodes.filter(n => pos.has(n.node_id)).map(n => {
      const p = pos.get(n.node_id);
      const x = px(p), y = py(p);
      const cls = ['tnode', sel.nodes.has(n.node_id) ? 'sel' : '', n.failed ? 'failed' : '', n.ended ? 'ended' : ''].filter(Boolean).join(' ');
      const g = s('g', {class: cls, tabindex: 0, dataset: {node: n.node_id}, onclick: () => this.show(n, g)},
        s('rect', {x, y, width: W, height: H, rx: 5}),
        s('text', {class: 'tool', x: x + 7, y: y + 16}, clip(n.depth === 0 ? 'seed' : (n.tool || '?'), 22) + '  ' + n.node_id),
        s('text', {class: 'obs', x: x + 7, y: y + 34}, clip(n.observation || n.intent || '', 28)),
        s('title', (n.tool || 'seed') + ': ' + clip(n.observation, 300)));
      g.addEventListener('keydown', ev => { if (ev.key === 'Enter') this.show(n, g); });
      return g;
    });
    return s('svg', {class: 'ttree', viewBox: `0 0 ${width} ${height}`, width, height, role: 'img'}, edges, nodes);
  }

  paths() {
    const ps = (this.seed.selection && this.seed.selection.paths) || [];
    if (!ps.length) return h('p.muted.small', 'No path selected (yet).');
    return h('ol.paths', ps.map(p => h('li', {dataset: {trajectory: p.path.trajectory_id}},
      h('span.mono', p.path.trajectory_id), ` · ${p.path.nodes.length} hops · score ${Number(p.score).toFixed(3)} `,
      h('span.muted.small', `(depth ${Number(p.depth).toFixed(2)}, richness ${Number(p.richness).toFixed(2)}, diversity ${Number(p.diversity).toFixed(2)})`))));
  }

  show(n, g) {
    for (const el of this.el.querySelectorAll('.tnode.open')) el.classList.remove('open');
    g.classList.add('open');
    let params = n.parameters;
    if (params != null && typeof params !== 'string') params = JSON.stringify(params, null, 2);
    fill(this.detail, h('div.node-title', h('b', n.depth === 0 ? 'seed' : n.tool), ' ', h('span.mono', n.node_id),
        n.failed ? h('span.badge.s-failed', 'failed') : null, n.ended ? h('span.muted', ' ended: ' + n.ended) : null),
      n.intent ? h('div.text', h('span.muted', 'intent '), n.intent) : null,
      params ? h('pre', params) : null,
      h('pre.out.full-obs', n.observation || ''));
    this.detail.className = 'node-detail';
  }
}

// SeedView is a seed run's section: its tree, its QA pairs kept and
// rejected.
export class SeedView {
  constructor(id, signal) {
    this.id = id;
    this.signal = signal;
    this.el = h('section#seed.card', h('h3', 'Trajectory tree'), h('p.muted', 'Loading…'));
  }

  async start() { await this.refresh(); }

  async refresh() {
    const seed = await readSeed(this.id, this.signal);
    // Drawn again only when something was recorded (a node opened by a
    // click stays open while the seed waits on its calls).
    const size = [seed.nodes.length, seed.ended.length, !!seed.selection, seed.qa.length, seed.rejected.length].join();
    if (size === this.size) return;
    this.size = size;
    const tree = new TreeView(seed);
    fill(this.el, h('h3', `Trajectory tree · ${seed.nodes.length} nodes` + (seed.ended.length ? ` · ${seed.ended.length} children not grown` : '')),
      seed.nodes.length ? tree.el : h('p.muted', 'No node yet.'),
      h('h3', `QA kept (${seed.qa.length})`), h('div.qas#qa-kept', seed.qa.map(q => qaCard(q))),
      seed.rejected.length ? [h('h3', `QA rejected (${seed.rejected.length})`), h('div.qas#qa-rejected', seed.rejected.map(r => rejectedCard(r)))] : null);
  }
}

// SynthesisView is a synthesis run's section: every seed's kept and
// rejected QA pairs, and the seeds with their trees one click away. Seeds
// are read a few at a time, the first 200 at once and more on demand.
export class SynthesisView {
  constructor(id, signal) {
    this.id = id;
    this.signal = signal;
    this.seeds = [];       // seed runs, in lane order
    this.read = new Map(); // seed run id -> what it recorded
    this.kept = h('div.qas#qa-kept');
    this.rejected = h('div.qas#qa-rejected');
    this.seedList = h('div#seeds');
    this.counts = h('span.muted#qa-counts');
    this.more = h('button#seeds-more', {hidden: true, onclick: () => this.readSeeds(200)}, 'more seeds');
    this.el = h('section#synthesis.card', h('h3', 'QA pairs'), this.counts,
      h('h3', 'Kept'), this.kept, h('h3', 'Rejected'), this.rejected,
      h('h3', 'Seeds'), this.seedList, this.more);
  }

  async start() { await this.refresh(); }

  // listSeeds walks the lanes and their seed runs (pages of 1000).
  async listSeeds() {
    const children = async id => {
      const out = [];
      for (let after = ''; ;) {
        const res = await api(`/runs?parent_id=${enc(id)}&limit=1000` + (after ? '&after=' + enc(after) : ''), {signal: this.signal});
        out.push(...res.runs);
        if (!res.next) return out.reverse();
        after = res.next;
      }
    };
    const seeds = [];
    for (const lane of await children(this.id)) {
      if (lane.workflow === 'synthesis.seed') { seeds.push(lane); continue; }
      seeds.push(...(await children(lane.id)).filter(r => r.workflow === 'synthesis.seed'));
    }
    return seeds;
  }

  async refresh() {
    this.seeds = await this.listSeeds();
    // A seed's entries change until it ends: read those again.
    for (const r of this.seeds) if (this.read.has(r.id) && !this.read.get(r.id).ended) this.read.delete(r.id);
    await this.readSeeds(200);
  }

  async readSeeds(n) {
    const todo = this.seeds.filter(r => !this.read.has(r.id)).slice(0, n);
    const work = todo.slice();
    const worker = async () => {
      for (let r; (r = work.shift());) {
        const seed = await readSeed(r.id, this.signal, 'qa,qa_rejected');
        seed.run = r;
        seed.ended = ['succeeded', 'failed', 'cancelled'].includes(r.status);
        this.read.set(r.id, seed);
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    this.render();
  }

  render() {
    const kept = [], rejected = [];
    for (const r of this.seeds) {
      const seed = this.read.get(r.id);
      if (!seed) continue;
      kept.push(...seed.qa.map(q => qaCard(q, r.id)));
      rejected.push(...seed.rejected.map(x => rejectedCard(x, r.id)));
    }
    fill(this.kept, kept.length ? kept : h('p.muted', 'none yet'));
    fill(this.rejected, rejected.length ? rejected : h('p.muted', 'none'));
    const unread = this.seeds.filter(r => !this.read.has(r.id)).length;
    this.counts.textContent = `${kept.length} kept, ${rejected.length} rejected, from ${this.seeds.length - unread} of ${this.seeds.length} seeds`;
    this.counts.dataset.kept = String(kept.length);
    this.counts.dataset.rejected = String(rejected.length);
    this.more.hidden = unread === 0;
    fill(this.seedList, this.seeds.map(r => this.seedRow(r)));
  }

  // seedRow is a seed's line, its tree drawn when opened. The same
  // element is kept across refreshes (an open tree stays open); a live
  // seed's tree is drawn again on each refresh while open.
  seedRow(r) {
    this.rows = this.rows || new Map();
    let row = this.rows.get(r.id);
    if (!row) {
      const box = h('div.seed-tree');
      const label = h('span');
      const d = h('details.seed', {dataset: {id: r.id}}, h('summary', label), box);
      const draw = async () => {
        const full = await readSeed(r.id, this.signal, 'node,ended,selection');
        fill(box, full.nodes.length ? new TreeView(full).el : h('p.muted', 'No node yet.'));
      };
      d.addEventListener('toggle', () => {
        if (!d.open || box.dataset.loaded) return;
        box.dataset.loaded = '1';
        box.append(h('p.muted', 'Loading…'));
        draw().catch(() => { delete box.dataset.loaded; });
      });
      row = {d, label, box, draw, status: ''};
      this.rows.set(r.id, row);
    } else if (row.d.open && row.status !== r.status || (row.d.open && !['succeeded', 'failed', 'cancelled'].includes(r.status))) {
      row.draw().catch(() => {});
    }
    row.status = r.status;
    const seed = this.read.get(r.id);
    fill(row.label, h('span.mono', r.task || r.id), ' ', badge(r.status), ' ',
      h('span.muted', seed ? `${seed.qa.length} kept, ${seed.rejected.length} rejected` : ''), ' ',
      h('a.small', {href: '#/runs/' + enc(r.id)}, 'open'));
    return row.d;
  }
}
