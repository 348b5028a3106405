// flock's run viewer: a single page with three views, the runs list
// (#/), a run (#/runs/ID) and two runs side by side (#/compare?a=&b=).
// Plain ES modules, no build step.

import {api, follow, token, setToken, terminal, Unauthorized, APIError} from './api.js';
import {h, fill, fold, lazyJSON, fmtTime, fmtDur, fmtNum, badge} from './dom.js';
import {Transcript} from './transcript.js';
import {RolloutView} from './rollout.js';
import {SynthesisView, SeedView} from './synthesis.js';
import {ComparePage} from './compare.js';
import {drawGraph} from './graph.js';
import {entryPages} from './samples.js';

const app = document.getElementById('app');
const live = document.getElementById('live');
const logout = document.getElementById('logout');

// view is the current page; its stop() ends its timers and streams.
let view = null;

logout.addEventListener('click', () => { setToken(''); route(); });

function showError(err) {
  if (err instanceof Unauthorized) { login(); return true; }
  return false;
}

// login shows the token form; the token goes to sessionStorage only.
function login(message) {
  stopView();
  logout.hidden = true;
  const input = h('input#token', {type: 'password', autocomplete: 'current-password', placeholder: 'auth token', required: true});
  const msg = h('p.error#login-error', message || (token() ? 'The token was refused.' : ''));
  const form = h('form#login.card', h('h2', 'Log in'),
    h('p.muted', 'This server needs its auth token. It is kept in this tab’s session storage, sent as a header, and never put in a URL.'),
    input, h('button#login-submit', {type: 'submit'}, 'Log in'), msg);
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    setToken(input.value.trim());
    try {
      await api('/runs?limit=1');
      route();
    } catch (err) {
      setToken('');
      msg.textContent = err instanceof Unauthorized ? 'The token was refused.' : String(err.message || err);
    }
  });
  fill(app, form);
  input.focus();
}

function stopView() {
  if (view) view.stop();
  view = null;
  live.hidden = true;
}

function route() {
  stopView();
  logout.hidden = !token();
  const m = location.hash.match(/^#\/runs\/([^/?]+)/);
  const params = new URLSearchParams(location.hash.split('?')[1] || '');
  if (m) view = new RunPage(decodeURIComponent(m[1]));
  else if (location.hash.startsWith('#/compare')) view = new CompareView(params.get('a'), params.get('b'));
  else view = new RunsPage(params);
  view.start().catch(err => { if (!showError(err)) fill(app, h('p.error', String(err.message || err))); });
}

window.addEventListener('hashchange', route);

// every runs fn every ms until stopped; it never overlaps itself.
function every(ms, fn) {
  let stopped = false, timer = null;
  const tick = async () => {
    try { await fn(); } catch (err) { if (showError(err)) return; }
    if (!stopped) timer = setTimeout(tick, ms);
  };
  timer = setTimeout(tick, ms);
  return () => { stopped = true; clearTimeout(timer); };
}

// workflows returns the registered workflows by name (read once).
let workflowsOnce = null;
function workflows() {
  if (!workflowsOnce) {
    workflowsOnce = api('/workflows').then(res => new Map((res.workflows || []).map(w => [w.name, w])))
      .catch(err => { workflowsOnce = null; throw err; });
  }
  return workflowsOnce;
}

// CompareView wraps the comparison page with the view lifecycle.
class CompareView {
  constructor(a, b) {
    this.abort = new AbortController();
    this.page = new ComparePage(a, b, this.abort.signal);
  }
  stop() { this.abort.abort(); }
  start() { return this.page.start(app); }
}

// ---------------------------------------------------------------- runs list

const statuses = ['running', 'paused', 'succeeded', 'failed', 'cancelled'];

class RunsPage {
  constructor(params) {
    this.filter = {status: params.get('status') || '', workflow: params.get('workflow') || '', parent_id: params.get('parent_id') || '',
      q: params.get('q') || '', all: params.get('all') === '1'};
    this.cursors = [''];  // cursors of the pages seen: cursors[i] starts page i
    this.page = 0;
    this.stops = [];
    this.expanded = new Set(); // runs whose children are shown
    this.picked = [];          // runs ticked for comparison, oldest tick first
  }

  stop() { this.stops.forEach(f => f()); }

  async start() {
    this.counts = h('div#counts.counts');
    this.status = h('select#f-status', h('option', {value: ''}, 'any status'), statuses.map(s => h('option', {value: s}, s)));
    this.workflow = h('select#f-workflow', h('option', {value: ''}, 'any workflow'));
    this.parent = h('input#f-parent', {placeholder: 'parent run id', size: 18});
    this.search = h('input#f-search', {type: 'search', placeholder: 'search tasks', size: 24});
    this.all = h('input#f-all', {type: 'checkbox'});
    this.status.value = this.filter.status;
    this.parent.value = this.filter.parent_id;
    this.search.value = this.filter.q;
    this.all.checked = this.filter.all;
    const apply = () => {
      const q = new URLSearchParams();
      if (this.status.value) q.set('status', this.status.value);
      if (this.workflow.value) q.set('workflow', this.workflow.value);
      if (this.parent.value.trim()) q.set('parent_id', this.parent.value.trim());
      if (this.search.value.trim()) q.set('q', this.search.value.trim());
      if (this.all.checked) q.set('all', '1');
      location.hash = '#/' + (q.toString() ? '?' + q : '');
    };
    for (const el of [this.status, this.workflow, this.parent, this.search, this.all]) el.addEventListener('change', apply);
    this.tbody = h('tbody');
    this.prev = h('button#prev', {onclick: () => this.go(this.page - 1)}, '← Newer');
    this.next = h('button#next', {onclick: () => this.go(this.page + 1)}, 'Older →');
    this.pageLabel = h('span.muted#page');
    this.compare = h('button#compare', {disabled: true, onclick: () => {
      location.hash = `#/compare?a=${encodeURIComponent(this.picked[0])}&b=${encodeURIComponent(this.picked[1])}`;
    }}, 'Compare the two ticked runs');
    fill(app,
      h('section', h('h1', 'Runs'), this.counts,
        h('div.filters', this.status, this.workflow, this.parent, this.search,
          h('label.muted', this.all, ' child runs too'), this.compare)),
      h('div.runs-box', h('table#runs.runs', h('thead', h('tr', ['Run', 'Workflow', 'Task', 'Status', 'End reason', 'Score', 'Step', 'Tokens', 'Created', 'Duration', 'Parent'].map(t => h('th', t)))), this.tbody)),
      h('div.pager', this.prev, this.pageLabel, this.next));
    const [, wfs] = await Promise.all([this.load(), workflows().catch(err => { if (err instanceof Unauthorized) throw err; return new Map(); })]);
    for (const name of wfs.keys()) this.workflow.append(h('option', {value: name}, name));
    this.workflow.value = this.filter.workflow;
    this.loadCounts();
    this.stops.push(every(2000, () => this.loadCounts()));
    // The first page follows new runs; older pages stay put.
    this.stops.push(every(3000, () => this.page === 0 ? this.load() : null));
  }

  async loadCounts() {
    let c;
    try { c = await api('/stats/runs'); } catch (err) { if (err instanceof Unauthorized) throw err; return; }
    fill(this.counts, h('span.count', h('b', fmtNum(c.total)), ' runs'),
      statuses.map(s => h('a.count', {href: '#/?status=' + s, dataset: {status: s}}, badge(s), ' ', h('b', fmtNum(c[s])))));
  }

  async go(page) {
    if (page < 0 || page >= this.cursors.length) return;
    this.page = page;
    await this.load();
  }

  // query is the GET /runs query of the filters: top-level runs unless
  // child runs are asked for (or a parent's children are listed).
  query() {
    const q = new URLSearchParams({limit: '50'});
    for (const k of ['status', 'workflow', 'parent_id', 'q']) if (this.filter[k]) q.set(k, this.filter[k]);
    if (!this.filter.all && !this.filter.parent_id) q.set('top', 'true');
    return q;
  }

  async load() {
    const q = this.query();
    if (this.cursors[this.page]) q.set('after', this.cursors[this.page]);
    const res = await api('/runs?' + q);
    const rows = [];
    for (const r of res.runs) {
      rows.push(this.row(r, 0));
      if (this.expanded.has(r.id)) rows.push(...await this.childRows(r.id, 1));
    }
    fill(this.tbody, rows);
    if (!res.runs.length) {
      this.tbody.append(h('tr', h('td.muted', {colSpan: 11}, this.filter.q && res.next ? 'No match in these runs; older runs may match.' : 'No runs.')));
    }
    this.cursors.length = this.page + 1;
    if (res.next) this.cursors.push(res.next);
    this.prev.disabled = this.page === 0;
    this.next.disabled = !res.next;
    this.pageLabel.textContent = ` page ${this.page + 1} `;
    if (!this.rendered) {
      this.rendered = true;
      performance.mark('flock:runs-rendered');
    }
  }

  // childRows returns the rows of run id's children (the newest 100), and
  // of theirs when expanded.
  async childRows(id, depth) {
    const res = await api('/runs?limit=100&parent_id=' + encodeURIComponent(id));
    const rows = [];
    for (const r of res.runs.slice().reverse()) {
      rows.push(this.row(r, depth));
      if (this.expanded.has(r.id)) rows.push(...await this.childRows(r.id, depth + 1));
    }
    if (res.next) rows.push(h('tr.child', h('td.muted', {colSpan: 11}, h('a', {href: '#/?parent_id=' + encodeURIComponent(id)}, `all children of ${id} …`))));
    return rows;
  }

  row(r, depth) {
    const now = Date.now();
    const open = this.expanded.has(r.id);
    const toggle = r.children ? h('button.expand.link', {title: open ? 'hide the child runs' : 'show the child runs', dataset: {id: r.id},
      onclick: () => { if (open) this.expanded.delete(r.id); else this.expanded.add(r.id); this.load(); }},
    (open ? '▾ ' : '▸ ') + r.children) : null;
    const pick = h('input.pick', {type: 'checkbox', title: 'tick two runs to compare them', checked: this.picked.includes(r.id),
      onchange: ev => this.pick(r.id, ev.target.checked)});
    const score = rolloutScore(r);
    const tr = h('tr' + (depth ? '.child' : ''), {dataset: {id: r.id, status: r.status, depth: String(depth)}},
      h('td.idcell', pick, h('span.indent' + depth), toggle, h('a.run-link', {href: '#/runs/' + r.id}, r.id)),
      h('td', r.workflow), h('td.task', {title: r.task || ''}, r.task || ''),
      h('td', badge(r.status), r.questions ? h('span.badge.s-waiting', {title: r.questions + ' question(s)'}, 'waiting for you') : null),
      h('td.reason', {title: r.end_reason || ''}, r.end_reason || ''), h('td.num.score', score),
      h('td.num', String(r.step)), h('td.num', fmtNum(r.usage.tokens)),
      h('td', {title: fmtTime(r.created_at)}, fmtShort(r.created_at)),
      h('td.num', fmtDur((r.ended_at ? Date.parse(r.ended_at) : now) - Date.parse(r.created_at))),
      h('td', r.parent_id ? h('a', {href: '#/runs/' + r.parent_id}, r.parent_id) : '',
        r.forked_from ? h('span.muted', 'fork of ', h('a', {href: '#/runs/' + r.forked_from.run}, r.forked_from.run), ' @' + r.forked_from.step) : null));
    return tr;
  }

  pick(id, on) {
    this.picked = this.picked.filter(x => x !== id);
    if (on) this.picked.push(id);
    while (this.picked.length > 2) this.picked.shift();
    for (const cb of this.tbody.querySelectorAll('input.pick')) cb.checked = this.picked.includes(cb.closest('tr').dataset.id);
    this.compare.disabled = this.picked.length !== 2;
  }
}

// rolloutScore is a finished rollout's mean score (and accuracy) from its
// result, the summary.
function rolloutScore(r) {
  const s = r.result;
  if (r.workflow !== 'rollout' || !s || typeof s !== 'object' || s.mean_score == null) return '';
  const acc = s.samples ? ` · ${s.correct}/${s.samples} correct` : '';
  return h('span', {title: `mean score ${s.mean_score}${acc}`, dataset: {score: String(s.mean_score)}}, Number(s.mean_score).toFixed(3));
}

// ---------------------------------------------------------------- run page

class RunPage {
  constructor(id) {
    this.id = id;
    this.abort = new AbortController();
    this.stops = [];
    this.lastSeq = 0;     // last entry shown
    this.ops = new Map(); // op id -> row
    this.opsCursor = '';  // ops before (and at) it are done and shown
    this.phases = [];     // phase events, for the timeline
    this.pending = null;  // a scheduled refresh
  }

  stop() {
    this.abort.abort();
    this.stops.forEach(f => f());
    clearTimeout(this.pending);
  }

  path(p = '') { return '/runs/' + encodeURIComponent(this.id) + p; }

  async start() {
    const head = await api(this.path());
    this.headEl = h('section#head.card');
    this.controls = h('section#controls.card');
    this.humanEl = h('section#human.card', {hidden: true});
    this.sampleEl = h('section#sample.card', {hidden: true});
    this.usageEl = h('section#usage.card');
    this.modelsEl = h('section#models.card', h('h3', 'Tokens and cost by model'));
    this.varsEl = h('section#vars.card');
    this.graphEl = h('section#graph.card', h('h3', 'Workflow'));
    this.childrenEl = h('section#children.card', {hidden: true});
    this.timelineEl = h('ol#timeline.timeline');
    this.transcriptEl = h('div#transcript.transcript');
    this.opsBody = h('tbody');
    this.opsMore = h('button#ops-more', {hidden: true, onclick: () => this.loadOps()}, 'more ops');
    this.transcript = new Transcript(this.transcriptEl);
    // Rollouts and syntheses have their own section; their entry logs
    // (thousands of tasks and rows) load only when opened.
    const special = {rollout: RolloutView, synthesis: SynthesisView, 'synthesis.seed': SeedView}[head.workflow];
    this.special = special ? new special(this.id, this.abort.signal) : null;
    // The section reads its data first: the rest of the page waits for
    // its first screen (at most a second).
    let first = null;
    if (this.special) {
      first = this.special.start(head).catch(err => { if (!showError(err) && !this.abort.signal.aborted) this.special.el.append(h('p.error', String(err.message || err))); });
      first = Promise.race([this.special.firstScreen || first, new Promise(r => setTimeout(r, 1000))]);
    }
    const lazyLog = this.special && head.entries > 200;
    const transcriptBox = lazyLog
      ? h('details#transcript-box.card', h('summary', h('h3.inline', `Entry log (${fmtNum(head.entries)} entries)`)), this.transcriptEl)
      : h('section.card', h('h3', 'Transcript'), this.transcriptEl);
    const grid = h('div.run-grid',
        h('div.side', this.headEl, this.sampleEl, this.controls, this.humanEl, this.usageEl, this.modelsEl, this.varsEl, this.childrenEl,
          h('section.card', h('h3', 'Phase timeline'), h('p.muted.small', 'Click a step to see the vars as it left them.'), this.timelineEl)),
        h('div.mainc',
          this.graphEl,
          transcriptBox,
          h('section.card', h('h3', 'Operation journal'),
            h('table#ops.ops', h('thead', h('tr', ['Op', 'Phase', 'Kind', 'Status', 'Attempts', 'Queued', 'Ran', 'Request', 'Result'].map(t => h('th', t)))), this.opsBody),
            this.opsMore)));
    this.renderControls();
    this.renderHead(head, true);
    // A rollout's or synthesis's section is laid out alone first; the
    // rest of the page follows its first screen.
    if (this.special) {
      fill(app, this.special.el);
      await first;
      app.append(grid);
    } else {
      fill(app, grid);
    }
    if (lazyLog) {
      transcriptBox.addEventListener('toggle', () => { if (transcriptBox.open && !this.logOpened) { this.logOpened = true; this.loadEntries(500).then(() => this.loadRest()); } });
    } else {
      this.logOpened = true;
      await this.loadEntries(500);
    }
    performance.mark('flock:transcript-rendered');
    if (this.logOpened) this.loadRest();
    this.loadOps();
    this.loadHuman();
    this.loadChildren();
    this.loadModels();
    this.renderGraph();
    this.renderVars();
    this.loadSample();
    live.hidden = false;
    this.follow();
    this.stops.push(every(2000, () => terminal(this.head.status) ? null : Promise.all([this.loadHuman(), this.loadChildren(), this.refreshSpecial()])));
  }

  // loadSample shows, on the page of a rollout sample's agent run, how
  // the sample was graded: its row in the lane that ran it.
  async loadSample() {
    const parent = this.head.parent_id;
    if (!parent) return;
    try {
      const lane = await api('/runs/' + encodeURIComponent(parent), {signal: this.abort.signal});
      if (lane.workflow !== 'rollout.lane') return;
      let row = null;
      for await (const page of entryPages(parent, 'row', {signal: this.abort.signal})) {
        row = page.map(e => e.data).find(r => r && r.run_id === this.id) || row;
      }
      if (!row) return;
      const scores = row.scores && Object.keys(row.scores).length ? row.scores : {[row.metric || 'score']: row.score};
      fill(this.sampleEl, h('h3', 'Rollout sample'),
        h('dl.kv', {dataset: {task: row.task_id, chain: String(row.chain)}},
          h('dt', 'rollout'), h('dd', lane.parent_id ? h('a#sample-rollout', {href: '#/runs/' + encodeURIComponent(lane.parent_id)}, lane.parent_id) : '—'),
          h('dt', 'task'), h('dd', `${row.task_id} · chain ${row.chain}`),
          h('dt', 'answer'), h('dd', String(row.predicted_answer ?? '')),
          h('dt', 'references'), h('dd', (row.ground_truth || []).join(' | ')),
          Object.entries(scores).map(([k, v]) => [h('dt', k), h('dd.num-left', String(v))]),
          h('dt', 'graded'), h('dd#sample-grade', !row.success ? h('span.bad', 'failed: ' + (row.end_reason || row.status)) :
            row.evaluated ? h(row.correct ? 'span.ok' : 'span.bad', row.correct ? '✓ correct' : '✗ incorrect') : h('span.muted', 'not graded')),
          row.eval_error ? [h('dt', 'eval error'), h('dd.warn', row.eval_error)] : null,
          row.judge_reasoning ? [h('dt', 'judge'), h('dd', row.judge_reasoning)] : null));
      this.sampleEl.hidden = false;
    } catch (err) { showError(err); }
  }

  // refreshSpecial reads what is new for the rollout or synthesis section.
  async refreshSpecial() {
    if (this.special && this.special.refresh) await this.special.refresh(this.head);
  }

  // loadRest loads the remaining entries page by page, after first paint.
  async loadRest() {
    while (!this.abort.signal.aborted && await this.loadEntries(1000) === 1000) { /* next page */ }
  }

  async loadEntries(limit) {
    if (this.loadingEntries || !this.logOpened) return 0;
    this.loadingEntries = true;
    try {
      const res = await api(this.path('/entries?after=' + this.lastSeq + '&limit=' + limit), {signal: this.abort.signal});
      const fresh = res.entries.filter(e => e.seq > this.lastSeq);
      if (fresh.length) {
        this.transcript.add(fresh);
        this.lastSeq = fresh[fresh.length - 1].seq;
      }
      if (!this.lastSeq && !this.transcriptEl.querySelector('.empty')) this.transcriptEl.append(h('p.muted.empty', 'No entries yet.'));
      else if (this.lastSeq) this.transcriptEl.querySelector('.empty')?.remove();
      return res.entries.length;
    } finally {
      this.loadingEntries = false;
    }
  }

  follow() {
    const setLive = s => { live.textContent = s; live.className = 'live ' + s; live.dataset.state = s; };
    follow(this.id, {
      signal: this.abort.signal,
      onState: setLive,
      onEvent: ev => {
        if (ev.type === 'phase' && ev.seq) this.addPhase(ev);
        if (ev.type === 'run' && ev.data && ev.data.forked_from) this.baseVars = ev.data.vars || {};
        this.schedule();
      },
    }).catch(err => { if (!showError(err)) setLive('error: ' + (err.message || err)); });
  }

  // schedule refreshes head, entries and ops soon, at most every 300 ms.
  schedule() {
    if (this.pending) return;
    this.pending = setTimeout(async () => {
      this.pending = null;
      try {
        const was = this.head.status;
        const head = await api(this.path(), {signal: this.abort.signal});
        this.renderHead(head);
        const ended = !terminal(was) && terminal(head.status);
        await Promise.all([this.loadEntries(1000), this.loadOps(true), this.loadHuman(),
          ended ? this.refreshSpecial() : null, ended ? this.loadModels() : null, ended ? this.loadChildren() : null]);
      } catch (err) { showError(err); }
    }, 300);
  }

  // renderHead shows the head r; first (the page's first render) leaves
  // the graph and vars for later.
  renderHead(r, first) {
    this.head = r;
    this.headEl.dataset.run = r.id;
    this.headEl.dataset.status = r.status;
    const limits = r.limits || {};
    fill(this.headEl, 
      h('h2', h('span.mono', r.id), ' ', h('span#run-status', {dataset: {status: r.status}}, badge(r.status))),
      h('dl.kv',
        h('dt', 'workflow'), h('dd', r.workflow),
        h('dt', 'phase'), h('dd#run-phase', r.phase || '—'),
        h('dt', 'step'), h('dd#run-step', String(r.step)),
        h('dt', 'entries'), h('dd', fmtNum(r.entries)),
        h('dt', 'created'), h('dd', fmtTime(r.created_at)),
        r.ended_at ? [h('dt', 'ended'), h('dd', fmtTime(r.ended_at) + ' (' + fmtDur(Date.parse(r.ended_at) - Date.parse(r.created_at)) + ')')] : null,
        r.parent_id ? [h('dt', 'parent'), h('dd', h('a', {href: '#/runs/' + r.parent_id}, r.parent_id))] : null,
        r.forked_from ? [h('dt', 'forked from'), h('dd', h('a', {href: '#/runs/' + r.forked_from.run}, r.forked_from.run), ' at step ' + r.forked_from.step)] : null,
        r.task ? [h('dt', 'task'), h('dd#run-task', r.task)] : null,
        r.end_reason ? [h('dt', 'end reason'), h('dd', r.end_reason)] : null,
        r.result != null ? [h('dt', 'result'), h('dd#run-result', resultView(r.result))] : null,
        r.error ? [h('dt', 'error'), h('dd.error', r.error)] : null,
        r.stalled ? [h('dt', 'stalled'), h('dd.warn', r.stalled)] : null,
        (r.waiting || []).length ? [h('dt', 'waiting'), h('dd', r.waiting.map(w => h('div', w.message)))] : null),
      this.cmpBox || (this.cmpBox = this.compareLinks(r)));
    const bar = (name, used, cap, fmt) => {
      // Widths are set through the CSSOM: the CSP forbids style attributes.
      const fill = h('div.fill' + (cap && used / cap > 0.9 ? '.hot' : ''));
      fill.style.width = (cap ? Math.min(100, 100 * (used || 0) / cap) : 0) + '%';
      return h('div.usage-row', {dataset: {name}},
        h('span.u-name', name), h('span.u-val', fmt(used) + (cap ? ' / ' + fmt(cap) : ' (no limit)')), h('div.meter', fill));
    };
    const u = r.usage || {};
    fill(this.usageEl, h('h3', 'Usage against limits'),
      bar('tokens', u.tokens, limits.tokens, fmtNum),
      bar('actions', u.actions, limits.actions, fmtNum),
      bar('seconds', u.seconds, limits.seconds, v => (v || 0).toFixed(1)),
      bar('cost', u.cost, limits.cost, v => '$' + (v || 0).toFixed(4)),
      u.replay_hits != null || u.replay_misses != null ? h('div.muted', `replay: ${u.replay_hits || 0} hits, ${u.replay_misses || 0} misses`) : null);
    const running = r.status === 'running', paused = r.status === 'paused';
    this.btn.cancel.disabled = terminal(r.status);
    this.btn.pause.disabled = !running;
    this.btn.resume.disabled = !paused;
    this.btn.intervene.disabled = terminal(r.status);
    if (!this.forkStep.value) this.forkStep.value = String(Math.min(3, r.step || 1));
    this.forkStep.max = String(r.step);
    if (first) return;
    if (this.selectedStep == null) this.renderVars();
    if (this.graphKey !== r.phase + '|' + r.status) this.renderGraph();
  }

  // compareLinks offers the comparisons that make sense for run r: a fork
  // with the run it was forked from, a rollout with another rollout.
  compareLinks(r) {
    const box = h('div.compare-links#compare-links');
    if (r.forked_from) {
      box.append(h('a#cmp-parent', {href: `#/compare?a=${encodeURIComponent(r.forked_from.run)}&b=${encodeURIComponent(r.id)}`}, 'Compare with the run it was forked from'));
    }
    if (r.workflow === 'rollout') {
      const sel = h('select#cmp-rollout', h('option', {value: ''}, 'compare with another rollout…'));
      api('/runs?workflow=rollout&top=true&limit=50', {signal: this.abort.signal}).then(res => {
        for (const o of res.runs) if (o.id !== r.id) {
          const bench = o.result && o.result.benchmark_name ? o.result.benchmark_name + ' · ' : '';
          sel.append(h('option', {value: o.id}, bench + o.id + ' · ' + o.status));
        }
        sel.dataset.loaded = '1';
      }).catch(showError);
      sel.addEventListener('change', () => { if (sel.value) location.hash = `#/compare?a=${encodeURIComponent(sel.value)}&b=${encodeURIComponent(r.id)}`; });
      box.append(sel);
    }
    return box.children.length ? box : null;
  }

  // renderGraph draws the run's workflow with its current phase marked.
  async renderGraph() {
    const r = this.head;
    this.graphKey = r.phase + '|' + r.status;
    let wfs;
    try { wfs = await workflows(); } catch (err) { showError(err); return; }
    const g = wfs.get(r.workflow);
    if (!g) { fill(this.graphEl, h('h3', 'Workflow'), h('p.muted', `${r.workflow} is not registered on this server.`)); return; }
    const visited = new Set(this.phases.map(p => p.phase));
    fill(this.graphEl, h('h3', 'Workflow · ' + g.name),
      g.description ? h('p.muted.small', g.description) : null,
      h('div.graph-box', drawGraph(g, {current: r.phase, visited, ended: terminal(r.status)})),
      h('p.muted.small', terminal(r.status) ? `ended in ${r.phase || '—'}` : `now in ${r.phase || '— (not started)'}`));
    this.graphEl.dataset.current = r.phase || '';
  }

  // varsAt rebuilds the vars as step left them, from the phase events
  // (each commit's "set") on top of a fork's starting vars.
  varsAt(step) {
    const vars = Object.assign({}, this.baseVars || {});
    const changed = new Set();
    for (const ev of this.phases) {
      if (ev.step > step || ev.status !== 'committed' || !ev.data || !ev.data.set) continue;
      for (const [k, v] of Object.entries(ev.data.set)) {
        if (v === null) delete vars[k]; else vars[k] = v;
        if (ev.step === step) changed.add(k);
      }
    }
    return {vars, changed};
  }

  selectStep(step) {
    this.selectedStep = this.selectedStep === step ? null : step;
    for (const li of this.timelineEl.children) li.classList.toggle('selected', Number(li.dataset.step) === this.selectedStep);
    this.renderVars();
  }

  // renderVars shows the current vars, or those of the selected step with
  // the ones it set marked.
  renderVars() {
    const step = this.selectedStep;
    const {vars, changed} = step == null ? {vars: this.head.vars || {}, changed: new Set()} : this.varsAt(step);
    const names = Object.keys(vars).sort();
    const edit = h('button#vars-edit.link', {onclick: () => {
      this.forkVars.value = JSON.stringify(vars, null, 2);
      if (step != null) this.forkStep.value = String(step);
      this.forkVars.closest('details').open = true;
      this.forkVars.focus();
    }}, 'edit in the fork form');
    fill(this.varsEl, h('h3', 'Vars · ' + (step == null ? 'now' : 'after step ' + step)),
      names.length ? h('dl.vars', names.map(k => [h('dt' + (changed.has(k) ? '.changed' : ''), {dataset: {name: k}}, k),
        h('dd', fold(JSON.stringify(vars[k], null, 1), {lines: 6, chars: 400}))])) : h('p.muted', 'no vars'),
      step != null ? h('button.link', {onclick: () => this.selectStep(step)}, 'show the current vars') : null, ' ', names.length ? edit : null);
    this.varsEl.dataset.step = step == null ? 'now' : String(step);
  }

  // loadModels shows the tokens and cost of the run's model calls by
  // model (with its child runs' when ticked).
  async loadModels() {
    const withKids = this.modelsKids ? this.modelsKids.checked : false;
    let u;
    try { u = await api(this.path('/usage' + (withKids ? '?descendants=true' : '')), {signal: this.abort.signal}); } catch (err) { showError(err); return; }
    this.modelsKids = h('input#models-kids', {type: 'checkbox', checked: withKids, onchange: () => this.loadModels()});
    const rows = u.models.map(m => h('tr', {dataset: {model: m.model}}, h('td', m.model), h('td.num', fmtNum(m.calls) + (m.errors ? ` (${m.errors} failed)` : '')),
      h('td.num', fmtNum(m.prompt_tokens)), h('td.num', fmtNum(m.completion_tokens)), h('td.num', '$' + m.cost.toFixed(4))));
    fill(this.modelsEl, h('h3', 'Tokens and cost by model'),
      rows.length ? h('table.models', h('thead', h('tr', ['model', 'calls', 'in', 'out', 'cost'].map(t => h('th', t)))), h('tbody', rows)) : h('p.muted', 'no model calls' + (withKids ? '' : ' in this run itself')),
      this.head.children ? h('label.muted.small', this.modelsKids, ` with child runs (${u.runs} runs${u.truncated ? ', the first 1,000' : ''})`) : null,
      h('button.link.small', {onclick: () => this.loadModels()}, 'refresh'));
  }

  renderControls() {
    const act = (label, what, extra = {}) => h('button#btn-' + what, Object.assign({onclick: () => this.control(what)}, extra), label);
    this.btn = {cancel: act('Cancel', 'cancel', {class: 'danger'}), pause: act('Pause', 'pause'), resume: act('Resume', 'resume')};
    this.msg = h('div#control-msg.muted');
    this.forkStep = h('input#fork-step', {type: 'number', min: 1, size: 5});
    this.forkMessage = h('textarea#fork-message', {rows: 2, placeholder: 'optional message injected into the fork'});
    this.forkVars = h('textarea#fork-vars', {rows: 2, placeholder: 'optional edited vars, a JSON object'});
    const fork = h('form#fork', h('label', 'Fork from step ', this.forkStep), this.forkMessage, this.forkVars,
      h('button#btn-fork', {type: 'submit'}, 'Fork'));
    fork.addEventListener('submit', ev => { ev.preventDefault(); this.fork(); });
    this.interveneAction = h('textarea#intervene-action', {rows: 3, placeholder: '{"name": "bash", "arguments": {"command": "ls"}}'});
    this.btn.intervene = h('button#btn-intervene', {onclick: () => this.intervene()}, 'Replace next action');
    fill(this.controls, h('h3', 'Operator'),
      h('div.buttons', this.btn.pause, this.btn.resume, this.btn.cancel), this.msg,
      h('details#fork-box', {open: true}, h('summary', 'Fork'), fork),
      h('details#intervene-box', h('summary', 'Intervene'), h('p.muted', 'The action the run will execute next instead of its own, as JSON.'),
        this.interveneAction, this.btn.intervene));
  }

  say(text, error) {
    this.msg.textContent = text;
    this.msg.className = error ? 'error' : 'muted';
  }

  async control(what) {
    try {
      const res = await api(this.path('/' + what), {method: 'POST'});
      this.say(`${what}: ${res.status}`);
    } catch (err) {
      if (!showError(err)) this.say(`${what}: ${err.message}`, true);
    }
    this.schedule();
  }

  async fork() {
    const body = {step: Number(this.forkStep.value)};
    if (this.forkMessage.value.trim()) body.message = this.forkMessage.value.trim();
    if (this.forkVars.value.trim()) {
      try { body.vars = JSON.parse(this.forkVars.value); } catch (err) { this.say('vars: not JSON: ' + err.message, true); return; }
    }
    try {
      const res = await api(this.path('/fork'), {body});
      location.hash = '#/runs/' + res.run_id;
    } catch (err) {
      if (!showError(err)) this.say('fork: ' + err.message, true);
    }
  }

  // intervene sends body, or by default the action typed in the
  // Intervene box, to POST /runs/ID/intervene.
  async intervene(body) {
    if (!body) {
      let action;
      try { action = JSON.parse(this.interveneAction.value); } catch (err) { this.say('action: not JSON: ' + err.message, true); return; }
      body = {action};
    }
    try {
      await api(this.path('/intervene'), {body});
      this.say(body.approve ? 'action approved' : 'action replaced');
      if (!body.approve) this.interveneAction.value = '';
      this.humanKey = null;
    } catch (err) {
      if (!showError(err)) this.say('intervene: ' + err.message, true);
    }
    this.schedule();
  }

  async loadHuman() {
    let res;
    try {
      res = await api(this.path('/human'), {signal: this.abort.signal});
    } catch (err) {
      if (err instanceof APIError && (err.status === 404 || err.status === 405)) { this.humanEl.hidden = true; return; }
      throw err;
    }
    const pending = (res && res.pending) || [];
    const key = JSON.stringify(pending.map(p => p.op_id));
    if (key === this.humanKey) return; // keep what the user is typing
    this.humanKey = key;
    this.humanEl.hidden = pending.length === 0;
    fill(this.humanEl, h('h3', 'Waiting for you'), pending.map(p => this.humanOp(p)));
  }

  humanOp(p) {
    const answer = async value => {
      try {
        await api(this.path('/human/' + encodeURIComponent(p.op_id) + '/answer'), {body: {answer: value}});
        this.humanKey = null;
        this.say('answered ' + p.op_id);
        await this.loadHuman();
      } catch (err) {
        if (!showError(err)) this.say('answer: ' + err.message, true);
      }
    };
    let input;
    if (p.kind === 'intervention') {
      // The run waits to execute p.action: approve it, or replace it
      // (the action is copied into the Intervene box for editing).
      const edit = () => {
        this.interveneAction.value = JSON.stringify(p.action, null, 2);
        this.interveneAction.closest('details').open = true;
        this.interveneAction.focus();
      };
      input = h('div', p.action ? h('pre', JSON.stringify(p.action, null, 2)) : null,
        h('div.choices', h('button.approve', {onclick: () => this.intervene({approve: true})}, 'Approve'),
          h('button.replace', {onclick: edit}, 'Replace…')));
    } else if (p.choices && p.choices.length) {
      input = h('div.choices', p.choices.map(c => h('button.choice', {onclick: () => answer(c)}, String(c))));
    } else if (p.scale) {
      const n = h('input.scale', {type: 'number', min: p.scale.min, max: p.scale.max, step: 'any', value: p.scale.min});
      input = h('div', n, ` (${p.scale.min} to ${p.scale.max}) `, h('button.answer', {onclick: () => answer(Number(n.value))}, 'Answer'));
    } else {
      const t = h('textarea.free', {rows: 2});
      input = h('div', t, h('button.answer', {onclick: () => answer(t.value)}, 'Answer'));
    }
    return h('div.human-op', {dataset: {op: p.op_id, kind: p.kind || 'human'}}, h('div.question', p.question || 'Approve the next action?'), h('div.muted', 'asked ' + fmtTime(p.asked_at)), input);
  }

  async loadChildren() {
    const tree = await this.childTree(this.id, 0);
    this.childrenEl.hidden = tree.length === 0;
    if (tree.length) fill(this.childrenEl, h('h3', 'Child runs'), h('ul.tree', tree));
  }

  async childTree(id, depth) {
    const res = await api('/runs?limit=100&parent_id=' + encodeURIComponent(id), {signal: this.abort.signal});
    const items = [];
    for (const r of res.runs.slice().reverse()) {
      const kids = depth < 3 ? await this.childTree(r.id, depth + 1) : [];
      items.push(h('li', {dataset: {id: r.id}}, h('a', {href: '#/runs/' + r.id}, r.id), ' ', badge(r.status), ' ',
        h('span.muted', `${r.workflow} · step ${r.step} · ${fmtNum(r.usage.tokens)} tokens`),
        kids.length ? h('ul', kids) : null));
    }
    return items;
  }

  addPhase(ev) {
    const prev = this.phases[this.phases.length - 1];
    this.phases.push(ev);
    if (prev) {
      const ms = Date.parse(ev.time) - Date.parse(prev.time);
      prev.el.querySelector('.dur').textContent = fmtDur(ms);
      prev.el.querySelector('.bar').style.width = Math.min(100, Math.max(2, Math.log10(1 + ms) * 20)) + '%';
    }
    ev.el = h('li', {dataset: {step: String(ev.step)}, title: 'the vars as this step left them', onclick: () => this.selectStep(ev.step)},
      h('span.step', String(ev.step)), h('span.ph', ev.phase),
      h('span.dur', terminal(this.head.status) ? '' : '…'), h('div.bar'));
    this.timelineEl.append(ev.el);
    if (this.graphEl && this.graphEl.dataset.current !== undefined && !this.graphEl.querySelector(`[data-phase="${CSS.escape(ev.phase)}"].seen`)) this.renderGraph();
  }

  // loadOps upserts ops after the cursor; with refresh it starts again
  // from the cursor, else it continues (the "more" button).
  async loadOps(refresh) {
    const after = refresh || !this.opsNext ? this.opsCursor : this.opsNext;
    const q = 'limit=200' + (after ? '&after=' + encodeURIComponent(after) : '');
    const res = await api(this.path('/ops?' + q), {signal: this.abort.signal});
    let contiguous = after === this.opsCursor;
    for (const op of res.ops) {
      const row = this.opRow(op);
      const old = this.ops.get(op.id);
      const detail = old && old.nextElementSibling;
      if (detail && detail.classList.contains('op-detail')) detail.remove();
      if (old) old.replaceWith(row); else this.opsBody.append(row);
      this.ops.set(op.id, row);
      if (contiguous && op.status === 'done') this.opsCursor = op.id; else contiguous = false;
    }
    this.opsNext = res.next;
    this.opsMore.hidden = !res.next;
  }

  opRow(op) {
    const t = x => x ? Date.parse(x) : null;
    const queued = t(op.started_at) && t(op.created_at) ? t(op.started_at) - t(op.created_at) : null;
    const ran = t(op.finished_at) && t(op.started_at) ? t(op.finished_at) - t(op.started_at) : null;
    const res = op.result;
    const req = op.request;
    const params = req.params || {};
    const data = (res && res.data) || {};
    let tr;
    // open shows a request or result in a row of its own, as wide as the
    // table.
    const open = (what, value) => {
      const next = tr.nextElementSibling;
      const shown = next && next.classList.contains('op-detail') && next.dataset.op === op.id ? next : null;
      if (shown) shown.remove();
      if (shown && shown.dataset.what === what) return;
      tr.after(h('tr.op-detail', {dataset: {op: op.id, what}}, h('td', {colSpan: 9},
        h('div.op-detail-head', h('b', what), ' of ', h('span.mono', op.id)), h('pre', JSON.stringify(value, null, 2)))));
    };
    // A shell command and its output are shown in the row itself.
    const cmd = req.type === 'bash' && params.command != null ? h('code.call', '$ ' + clipText(params.command, 120))
      : req.type === 'python' && params.code != null ? h('code.call', clipText(params.code, 120)) : null;
    const out = req.type === 'bash' && res && !res.error ? [data.exit_code ? h('span.bad', 'exit ' + data.exit_code + ' ') : null,
      fold((data.stdout || '') + (data.stderr ? (data.stdout ? '\n' : '') + data.stderr : '') || '(no output)', {lines: 4, chars: 400, cls: '.out'})]
      : req.type === 'python' && res && !res.error && (data.output || data.error) ? fold((data.output || '') + (data.error || ''), {lines: 4, chars: 400, cls: '.out'}) : null;
    tr = h('tr', {dataset: {op: op.id, status: op.status}},
      h('td.mono', op.id.slice(op.run_id.length + 1)), h('td', op.phase), h('td', req.type),
      h('td', res && res.error ? h('span.badge.s-failed', 'error') : badge(op.status)),
      h('td.num', String(op.attempts)), h('td.num', fmtDur(queued)), h('td.num', fmtDur(ran)),
      h('td.req', cmd, h('button.link.show-req', {onclick: () => open('request', req)}, 'request')),
      h('td.res', res ? [res.error ? h('div.error', fold(res.error, {lines: 3, chars: 300})) : null, out,
        h('button.link.show-res', {onclick: () => open('result', res)}, 'result')] : ''));
    return tr;
  }
}

// fmtShort is a time as the list shows it: the time of day for today's,
// else the date and time, without seconds.
function fmtShort(t) {
  const d = new Date(t);
  if (isNaN(d)) return '';
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString([], {hour: '2-digit', minute: '2-digit', second: '2-digit'})
    : d.toLocaleString([], {year: '2-digit', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit'});
}

function clipText(t, n) {
  t = String(t);
  return t.length > n ? t.slice(0, n - 1) + '…' : t;
}

// resultView shows a run's result: text as it is, an object as its
// fields (a rollout's summary: its scores first), the rest as JSON.
function resultView(v) {
  if (typeof v === 'string') return v;
  if (!v || typeof v !== 'object' || Array.isArray(v)) return JSON.stringify(v);
  const first = ['mean_score', 'accuracy', 'success_rate', 'pass_at', 'correct', 'samples', 'failed', 'answer', 'qa_kept'];
  const keys = Object.keys(v).sort((a, b) => (first.indexOf(a) + 1 || 99) - (first.indexOf(b) + 1 || 99) || (a < b ? -1 : 1));
  const short = keys.slice(0, 8);
  const line = k => {
    const x = v[k];
    const text = x != null && typeof x === 'object' ? JSON.stringify(x) : String(x);
    return h('div.res-field', {dataset: {key: k}}, h('span.muted', k + ' '), clipText(text, 200));
  };
  return h('div.result', short.map(line), keys.length > short.length ? lazyJSON(`all ${keys.length} fields`, v) : null);
}

route();
