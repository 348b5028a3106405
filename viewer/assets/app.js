// flock's run viewer: a single page with two views, the runs list (#/)
// and a run (#/runs/ID). Plain ES modules, no build step.

import {api, follow, token, setToken, terminal, Unauthorized, APIError} from './api.js';
import {h, fill, fold, lazyJSON, fmtTime, fmtDur, fmtNum, badge} from './dom.js';
import {Transcript} from './transcript.js';

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
  view = m ? new RunPage(decodeURIComponent(m[1])) : new RunsPage(new URLSearchParams(location.hash.split('?')[1] || ''));
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

// ---------------------------------------------------------------- runs list

const statuses = ['running', 'paused', 'succeeded', 'failed', 'cancelled'];

class RunsPage {
  constructor(params) {
    this.filter = {status: params.get('status') || '', workflow: params.get('workflow') || '', parent_id: params.get('parent_id') || ''};
    this.cursors = [''];  // cursors of the pages seen: cursors[i] starts page i
    this.page = 0;
    this.stops = [];
  }

  stop() { this.stops.forEach(f => f()); }

  async start() {
    this.counts = h('div#counts.counts');
    this.status = h('select#f-status', h('option', {value: ''}, 'any status'), statuses.map(s => h('option', {value: s}, s)));
    this.workflow = h('select#f-workflow', h('option', {value: ''}, 'any workflow'));
    this.parent = h('input#f-parent', {placeholder: 'parent run id', size: 18});
    this.status.value = this.filter.status;
    this.parent.value = this.filter.parent_id;
    const apply = () => {
      const q = new URLSearchParams();
      if (this.status.value) q.set('status', this.status.value);
      if (this.workflow.value) q.set('workflow', this.workflow.value);
      if (this.parent.value.trim()) q.set('parent_id', this.parent.value.trim());
      location.hash = '#/' + (q.toString() ? '?' + q : '');
    };
    this.status.addEventListener('change', apply);
    this.workflow.addEventListener('change', apply);
    this.parent.addEventListener('change', apply);
    this.tbody = h('tbody');
    this.prev = h('button#prev', {onclick: () => this.go(this.page - 1)}, '← Newer');
    this.next = h('button#next', {onclick: () => this.go(this.page + 1)}, 'Older →');
    this.pageLabel = h('span.muted#page');
    fill(app, 
      h('section', h('h1', 'Runs'), this.counts,
        h('div.filters', this.status, this.workflow, this.parent)),
      h('table#runs.runs', h('thead', h('tr', ['Run', 'Workflow', 'Status', 'Phase', 'Step', 'Entries', 'Tokens', 'Actions', 'Created', 'Duration', 'Parent'].map(t => h('th', t)))), this.tbody),
      h('div.pager', this.prev, this.pageLabel, this.next));
    const [, wfs] = await Promise.all([this.load(), api('/workflows').catch(err => { if (err instanceof Unauthorized) throw err; return {workflows: []}; })]);
    for (const w of wfs.workflows || []) this.workflow.append(h('option', {value: w.name}, w.name));
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

  async load() {
    const q = new URLSearchParams({limit: '50'});
    for (const [k, v] of Object.entries(this.filter)) if (v) q.set(k, v);
    if (this.cursors[this.page]) q.set('after', this.cursors[this.page]);
    const res = await api('/runs?' + q);
    const now = Date.now();
    fill(this.tbody, res.runs.map(r => h('tr', {dataset: {id: r.id, status: r.status}},
      h('td', h('a.run-link', {href: '#/runs/' + r.id}, r.id)),
      h('td', r.workflow), h('td', badge(r.status)), h('td', r.phase), h('td.num', String(r.step)),
      h('td.num', fmtNum(r.entries)), h('td.num', fmtNum(r.usage.tokens)), h('td.num', fmtNum(r.usage.actions)),
      h('td', fmtTime(r.created_at)),
      h('td.num', fmtDur((r.ended_at ? Date.parse(r.ended_at) : now) - Date.parse(r.created_at))),
      h('td', r.parent_id ? h('a', {href: '#/runs/' + r.parent_id}, r.parent_id) : '',
        r.forked_from ? h('span.muted', 'fork of ', h('a', {href: '#/runs/' + r.forked_from.run}, r.forked_from.run), ' @' + r.forked_from.step) : null))));
    if (!res.runs.length) this.tbody.append(h('tr', h('td.muted', {colSpan: 11}, 'No runs.')));
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
    this.usageEl = h('section#usage.card');
    this.childrenEl = h('section#children.card', {hidden: true});
    this.timelineEl = h('ol#timeline.timeline');
    this.transcriptEl = h('div#transcript.transcript');
    this.opsBody = h('tbody');
    this.opsMore = h('button#ops-more', {hidden: true, onclick: () => this.loadOps()}, 'more ops');
    this.transcript = new Transcript(this.transcriptEl);
    fill(app, 
      h('div.run-grid',
        h('div.side', this.headEl, this.controls, this.humanEl, this.usageEl, this.childrenEl,
          h('section.card', h('h3', 'Phase timeline'), this.timelineEl)),
        h('div.mainc',
          h('section.card', h('h3', 'Transcript'), this.transcriptEl),
          h('section.card', h('h3', 'Operation journal'),
            h('table#ops.ops', h('thead', h('tr', ['Op', 'Phase', 'Kind', 'Status', 'Attempts', 'Queued', 'Ran', 'Request', 'Result'].map(t => h('th', t)))), this.opsBody),
            this.opsMore))));
    this.renderControls();
    this.renderHead(head);
    await this.loadEntries(500);
    performance.mark('flock:transcript-rendered');
    this.loadRest();
    this.loadOps();
    this.loadHuman();
    this.loadChildren();
    live.hidden = false;
    this.follow();
    this.stops.push(every(2000, () => terminal(this.head.status) ? null : Promise.all([this.loadHuman(), this.loadChildren()])));
  }

  // loadRest loads the remaining entries page by page, after first paint.
  async loadRest() {
    while (!this.abort.signal.aborted && await this.loadEntries(1000) === 1000) { /* next page */ }
  }

  async loadEntries(limit) {
    if (this.loadingEntries) return 0;
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
        const head = await api(this.path(), {signal: this.abort.signal});
        this.renderHead(head);
        await Promise.all([this.loadEntries(1000), this.loadOps(true), this.loadHuman()]);
      } catch (err) { showError(err); }
    }, 300);
  }

  renderHead(r) {
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
        r.end_reason ? [h('dt', 'end reason'), h('dd', r.end_reason)] : null,
        r.result != null ? [h('dt', 'result'), h('dd#run-result', typeof r.result === 'string' ? r.result : JSON.stringify(r.result))] : null,
        r.error ? [h('dt', 'error'), h('dd.error', r.error)] : null,
        r.stalled ? [h('dt', 'stalled'), h('dd.warn', r.stalled)] : null,
        (r.waiting || []).length ? [h('dt', 'waiting'), h('dd', r.waiting.map(w => h('div', w.message)))] : null));
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
    ev.el = h('li', {dataset: {step: String(ev.step)}}, h('span.step', String(ev.step)), h('span.ph', ev.phase),
      h('span.dur', terminal(this.head.status) ? '' : '…'), h('div.bar'));
    this.timelineEl.append(ev.el);
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
    return h('tr', {dataset: {op: op.id, status: op.status}},
      h('td.mono', op.id.slice(op.run_id.length + 1)), h('td', op.phase), h('td', op.request.type),
      h('td', res && res.error ? h('span.badge.s-failed', 'error') : badge(op.status)),
      h('td.num', String(op.attempts)), h('td.num', fmtDur(queued)), h('td.num', fmtDur(ran)),
      h('td', lazyJSON('request', op.request)),
      h('td', res ? [res.error ? h('div.error', fold(res.error, {lines: 3, chars: 300})) : null, lazyJSON('result', res)] : ''));
  }
}

route();
