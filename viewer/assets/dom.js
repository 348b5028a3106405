// Small DOM helpers. Text always goes through textContent: entries hold
// model output, which must never be parsed as HTML.

// h builds an element: h('div.cls#id', {attr: v, onclick: f}, child...).
export function h(spec, attrs, ...children) {
  const m = spec.match(/^([a-z0-9]+)?((?:[.#][\w-]+)*)$/i);
  const el = document.createElement((m && m[1]) || 'div');
  for (const part of ((m && m[2]) || '').match(/[.#][\w-]+/g) || []) {
    if (part[0] === '.') el.classList.add(part.slice(1)); else el.id = part.slice(1);
  }
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

// fill replaces el's children; like h, it flattens arrays and drops null,
// undefined and false.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// fold shows text in a <pre>, folded behind its first lines when long.
export function fold(text, {lines = 12, chars = 1200, cls = ''} = {}) {
  text = text == null ? '' : String(text);
  const all = text.split('\n');
  if (all.length <= lines && text.length <= chars) return h('pre' + cls, text);
  const head = all.slice(0, lines).join('\n').slice(0, chars);
  const d = h('details.fold', h('summary', h('pre' + cls, head + '\n…'),
    h('span.muted', `show all (${all.length} lines, ${text.length} chars)`)));
  // The full text is built only when opened: thousands of long outputs
  // stay cheap to render.
  d.addEventListener('toggle', () => {
    if (d.open && !d.dataset.full) {
      d.dataset.full = '1';
      d.append(h('pre' + cls, text));
    }
  });
  return d;
}

// json shows a value as indented JSON, lazily behind a summary.
export function lazyJSON(label, value) {
  const d = h('details.json', h('summary', label));
  d.addEventListener('toggle', () => {
    if (d.open && !d.dataset.full) {
      d.dataset.full = '1';
      d.append(h('pre', JSON.stringify(value, null, 2)));
    }
  });
  return d;
}

export function fmtTime(t) {
  if (!t) return '';
  const d = new Date(t);
  return isNaN(d) ? '' : d.toLocaleString();
}

export function fmtDur(ms) {
  if (ms == null || isNaN(ms)) return '';
  if (ms < 1000) return Math.round(ms) + ' ms';
  const s = ms / 1000;
  if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + ' s';
  const m = Math.floor(s / 60);
  if (m < 60) return m + ' m ' + Math.round(s % 60) + ' s';
  return Math.floor(m / 60) + ' h ' + (m % 60) + ' m';
}

export function fmtNum(n) {
  return n == null ? '' : Number(n).toLocaleString('en-US');
}

export function badge(status) {
  return h('span.badge.s-' + (status || 'unknown'), status || '?');
}
