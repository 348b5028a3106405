// Small SVG charts and bars. Sizes go through attributes and the CSSOM:
// the page's CSP forbids style attributes.

const NS = 'http://www.w3.org/2000/svg';

// s builds an SVG element with attributes and children (strings become
// text nodes).
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const fmt = v => (Math.round(v * 1000) / 1000).toString();

// lineChart draws values (y in [0, 1]) over x = 1..n with a label under
// each point: pass@k over k.
export function lineChart(values, {width = 260, height = 120, xLabel = i => String(i + 1), id} = {}) {
  const pad = {l: 30, r: 18, t: 10, b: 22};
  const w = width - pad.l - pad.r, hgt = height - pad.t - pad.b;
  const x = i => pad.l + (values.length > 1 ? i * w / (values.length - 1) : w / 2);
  const y = v => pad.t + hgt * (1 - Math.max(0, Math.min(1, v)));
  const pts = values.map((v, i) => x(i) + ',' + y(v)).join(' ');
  return s('svg', {class: 'chart', id, viewBox: `0 0 ${width} ${height}`, width, height, role: 'img'},
    [0, 0.5, 1].map(g => [s('line', {class: 'grid', x1: pad.l, x2: width - pad.r, y1: y(g), y2: y(g)}),
      s('text', {class: 'axis', x: pad.l - 4, y: y(g) + 4, 'text-anchor': 'end'}, String(g))]),
    s('polyline', {class: 'line', points: pts}),
    values.map((v, i) => s('g', {class: 'point', dataset: {k: String(i + 1), value: fmt(v)}},
      s('circle', {cx: x(i), cy: y(v), r: 3}, s('title', `${xLabel(i)}: ${fmt(v)}`)),
      s('text', {class: 'axis', x: x(i), y: height - 6, 'text-anchor': 'middle'}, xLabel(i)))));
}

// barChart draws counts as vertical bars with the bins' edges below.
export function barChart(counts, {width = 260, height = 120, lo = 0, hi = 1, id} = {}) {
  const pad = {l: 8, r: 8, t: 14, b: 22};
  const w = width - pad.l - pad.r, hgt = height - pad.t - pad.b;
  const max = Math.max(1, ...counts);
  const bw = w / counts.length;
  const edge = i => fmt(lo + (hi - lo) * i / counts.length);
  return s('svg', {class: 'chart', id, viewBox: `0 0 ${width} ${height}`, width, height, role: 'img'},
    counts.map((c, i) => {
      const bh = hgt * c / max;
      return s('g', {class: 'bin', dataset: {bin: String(i), count: String(c)}},
        s('rect', {x: pad.l + i * bw + 1, y: pad.t + hgt - bh, width: Math.max(1, bw - 2), height: bh},
          s('title', `[${edge(i)}, ${edge(i + 1)}${i === counts.length - 1 ? ']' : ')'}: ${c}`)),
        c ? s('text', {class: 'axis', x: pad.l + (i + 0.5) * bw, y: pad.t + hgt - bh - 3, 'text-anchor': 'middle'}, String(c)) : null);
    }),
    s('line', {class: 'grid', x1: pad.l, x2: width - pad.r, y1: pad.t + hgt, y2: pad.t + hgt}),
    [0, counts.length / 2, counts.length].map(i => s('text', {class: 'axis', x: pad.l + i * bw, y: height - 6,
      'text-anchor': i === 0 ? 'start' : i === counts.length ? 'end' : 'middle'}, edge(i))));
}

// meter is a horizontal bar whose fill is frac of its width.
export function meter(frac, cls = '') {
  const fill = document.createElement('div');
  fill.className = 'fill' + (cls ? ' ' + cls : '');
  fill.style.width = (100 * Math.max(0, Math.min(1, frac || 0))) + '%';
  const m = document.createElement('div');
  m.className = 'meter';
  m.append(fill);
  return m;
}
