// A workflow's graph, drawn from its declaration (GET /workflows): its
// phases in layers by distance from the start, each transition an arrow,
// the current phase marked and the phases the run went through shaded.

import {s} from './charts.js';

const NODE_W = 104, NODE_H = 26, GAP_X = 26, GAP_Y = 14, PAD = 10;

// layers puts each phase one layer right of every phase that leads to
// it (the longest path from the start), not counting the transitions
// that go back to a phase on the way (loops); phases the start does not
// reach go in a last layer.
function layers(g) {
  const next = g.transitions || {};
  const back = new Set(), state = new Map(); // 1: on the path, 2: done
  const visit = p => {
    state.set(p, 1);
    for (const n of next[p] || []) {
      if (state.get(n) === 1) back.add(p + '>' + n);
      else if (!state.has(n)) visit(n);
    }
    state.set(p, 2);
  };
  visit(g.start);
  const depth = new Map([[g.start, 0]]);
  // Relax forward edges until nothing moves (a DAG: at most |phases| rounds).
  for (let round = 0, moved = true; moved && round <= (g.phases || []).length; round++) {
    moved = false;
    for (const [p, ns] of Object.entries(next)) {
      if (!depth.has(p)) continue;
      for (const n of ns) {
        if (back.has(p + '>' + n)) continue;
        const d = depth.get(p) + 1;
        if (!(depth.get(n) >= d)) { depth.set(n, d); moved = true; }
      }
    }
  }
  const last = Math.max(0, ...depth.values()) + 1;
  const out = [];
  for (const p of g.phases || []) {
    const d = depth.has(p) ? depth.get(p) : last;
    (out[d] = out[d] || []).push(p);
  }
  return out.filter(Boolean);
}

const clip = (t, n) => t.length > n ? t.slice(0, n - 1) + '…' : t;

// drawGraph returns an SVG of graph g with phase current marked and the
// phases in visited shaded.
export function drawGraph(g, {current = '', visited = new Set(), ended = false} = {}) {
  const ls = layers(g);
  const pos = new Map();
  const rows = Math.max(...ls.map(l => l.length));
  const width = PAD * 2 + ls.length * NODE_W + (ls.length - 1) * GAP_X;
  const top = 16 + 6 * ls.length; // room for the arcs over a row
  const height = PAD * 2 + rows * NODE_H + (rows - 1) * GAP_Y + top + 6 * ls.length; // and under it
  ls.forEach((layer, i) => layer.forEach((p, j) => {
    const off = (rows - layer.length) * (NODE_H + GAP_Y) / 2;
    pos.set(p, {x: PAD + i * (NODE_W + GAP_X), y: PAD + top + off + j * (NODE_H + GAP_Y)});
  }));
  const edges = [];
  for (const [from, tos] of Object.entries(g.transitions || {})) {
    const a = pos.get(from);
    if (!a) continue;
    for (const to of tos) {
      const b = pos.get(to);
      if (!b) continue;
      let d;
      if (from === to) {
        // A loop: an arc over the node.
        const x = a.x + NODE_W / 2;
        d = `M ${x - 12} ${a.y} C ${x - 22} ${a.y - 18}, ${x + 22} ${a.y - 18}, ${x + 12} ${a.y}`;
      } else if (b.x > a.x && (b.x - a.x <= NODE_W + GAP_X || a.y !== b.y)) {
        const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2, x2 = b.x, y2 = b.y + NODE_H / 2;
        d = `M ${x1} ${y1} C ${x1 + GAP_X / 2} ${y1}, ${x2 - GAP_X / 2} ${y2}, ${x2} ${y2}`;
      } else if (b.x > a.x) {
        // Forward past the phases between, on the same row: over them.
        const x1 = a.x + NODE_W / 2 + 10, x2 = b.x + NODE_W / 2 - 10, y = a.y;
        const lift = 10 + 6 * Math.round((b.x - a.x) / (NODE_W + GAP_X));
        d = `M ${x1} ${y} C ${x1} ${y - lift}, ${x2} ${y - lift}, ${x2} ${y}`;
      } else {
        // Back (or sideways) to an earlier layer: under the nodes.
        const x1 = a.x + NODE_W / 2, y1 = a.y + NODE_H, x2 = b.x + NODE_W / 2 + 8, y2 = b.y + NODE_H;
        const low = Math.max(y1, y2) + 8 + 6 * Math.round(Math.abs(a.x - b.x) / (NODE_W + GAP_X));
        d = `M ${x1} ${y1} C ${x1} ${low}, ${x2} ${low}, ${x2} ${y2}`;
      }
      edges.push(s('path', {class: 'edge' + (visited.has(from) && visited.has(to) ? ' seen' : ''), d, 'marker-end': 'url(#arrow)',
        dataset: {from, to}}));
    }
  }
  const nodes = (g.phases || []).map(p => {
    const {x, y} = pos.get(p);
    const cls = ['node', p === current ? (ended ? 'last' : 'current') : '', visited.has(p) ? 'seen' : '', p === g.start ? 'start' : ''].filter(Boolean).join(' ');
    return s('g', {class: cls, dataset: {phase: p}},
      s('rect', {x, y, width: NODE_W, height: NODE_H, rx: 5}),
      s('text', {x: x + NODE_W / 2, y: y + NODE_H / 2 + 4, 'text-anchor': 'middle'}, clip(p, 16)),
      s('title', p + (p === g.start ? ' (start)' : '') + (p === current ? ' (current)' : '')));
  });
  return s('svg', {class: 'wf-graph', viewBox: `0 0 ${Math.max(width, 120)} ${height + 12}`, width: Math.max(width, 120), height: height + 12, role: 'img'},
    s('defs', s('marker', {id: 'arrow', viewBox: '0 0 8 8', refX: 7, refY: 4, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse'},
      s('path', {d: 'M 0 0 L 8 4 L 0 8 z', class: 'arrowhead'}))),
    edges, nodes);
}
