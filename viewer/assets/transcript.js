// The transcript: a run's entry log rendered for people. Triframe's
// entries (task, advice, options, ratings, choice, tool_output, warning,
// subagents, tournament, conclusion, submission, operator_message), shell
// commands (command), a rollout's samples (task, row) and a synthesis
// seed's (node, qa, qa_rejected) get their own layout; any other entry
// shows its summary and its JSON.

import {h, fold, lazyJSON} from './dom.js';

function describeCall(call) {
  if (!call) return null;
  let args = call.arguments;
  if (typeof args === 'string') { try { args = JSON.parse(args); } catch { /* keep text */ } }
  if (args && typeof args === 'object') {
    if (call.name === 'bash' && typeof args.command === 'string') return h('code.call', '$ ' + args.command);
    if (call.name === 'python' && typeof args.code === 'string') return h('pre.call', args.code);
    if ((call.name === 'submit' || call.name === 'conclude') && args.answer !== undefined) return h('code.call', call.name + ': ' + args.answer);
    return h('code.call', call.name + ' ' + JSON.stringify(args));
  }
  return h('code.call', call.name + ' ' + (args == null ? '' : String(args)));
}

function option(o, i) {
  return h('li.option', {dataset: {index: String(i)}},
    h('div.opt-head', h('span.opt-index', '[' + i + ']'), ' ', o.source ? h('span.muted', o.source) : null,
      h('span.opt-score')),
    o.content ? h('div.text', o.content) : null,
    describeCall(o.call),
    o.invalid ? h('div.warn', 'invalid: ' + o.invalid) : null);
}

function block(kind, title, ...body) {
  return h('div.block.k-' + kind, h('div.block-title', title), ...body);
}

// renderers by entry type; each returns the entry's body.
const renderers = {
  // triframe's task ({task, tools}) and a rollout's ({id, question,
  // references}).
  task: d => block('task', 'Task' + (d.id != null && d.question != null ? ' ' + d.id : ''), h('div.text', d.task || d.question || d.summary || ''),
    d.references && d.references.length ? h('div.muted', 'references: ' + d.references.join(' | ')) : null,
    d.tools && d.tools.length ? h('div.muted', 'tools: ' + d.tools.join(', ') + (d.mode ? ' · mode ' + d.mode : '')) : null),
  // A shell command's result (script, parallel-commands).
  command: d => block('tool' + (d.exit_code ? '.failed' : ''), 'Command' + (d.index != null ? ' ' + (d.index + 1) : '') +
      ' · exit ' + (d.exit_code ?? '?') + (d.timed_out ? ' (timed out)' : ''),
    h('code.call', '$ ' + (d.command || '')),
    d.stdout ? fold(d.stdout, {cls: '.out'}) : null,
    d.stderr ? fold(d.stderr, {cls: '.out.stderr'}) : null,
    d.error ? h('div.warn', d.error) : null,
    !d.stdout && !d.stderr && !d.error ? h('div.muted', '(no output)') : null),
  // A rollout sample's graded row.
  row: d => block('row' + (d.success ? '' : '.failed'), `Sample ${d.task_id} · chain ${d.chain}`,
    h('div', h('span.muted', 'answer '), h('b', String(d.predicted_answer ?? '')),
      d.ground_truth && d.ground_truth.length ? h('span.muted', ' · references ' + d.ground_truth.join(' | ')) : null),
    h('div', !d.success ? h('span.bad', 'failed: ' + (d.end_reason || d.status || '')) :
      d.evaluated ? h(d.correct ? 'span.ok' : 'span.bad', (d.correct ? '✓ correct' : '✗ incorrect') + ' · score ' + d.score) : h('span.muted', 'not graded'),
    d.run_id ? [' · ', h('a', {href: '#/runs/' + d.run_id}, 'transcript')] : null),
    d.error ? h('div.warn', d.error) : null, d.eval_error ? h('div.warn', d.eval_error) : null),
  // A synthesis seed's tree node and QA.
  node: d => block('tool' + (d.failed ? '.failed' : ''), `Node ${d.node_id}` + (d.tool ? ' · ' + d.tool : ' · seed'),
    d.intent ? h('div.text', d.intent) : null, fold(d.observation || '', {cls: '.out'})),
  qa: d => block('submission', 'QA kept', h('div.text', d.question), h('div', h('span.muted', 'answer '), h('b', d.answer)),
    h('div.muted', 'checks: ' + (d.checks_passed || []).join(', '))),
  qa_rejected: d => block('warning', 'QA rejected · ' + d.check, h('div.text', d.reason || '')),
  advice: d => block('advice', 'Advice' + (d.advisor != null ? ' (advisor ' + d.advisor + ')' : ''),
    d.advice ? h('div.text', d.advice) : h('div.warn', 'no usable advice: ' + (d.invalid || ''))),
  options: d => block('options', 'Options',
    h('ol.options', (d.options || []).map(option)),
    d.dropped || d.merged ? h('div.muted', `${d.dropped || 0} dropped, ${d.merged || 0} merged`) : null,
    (d.errors || []).map(e => h('div.warn', e))),
  ratings: d => block('ratings', 'Ratings',
    h('table.ratings', h('thead', h('tr', h('th', 'option'), h('th', 'mean'), h('th', 'min'), h('th', 'max'), h('th', 'n'))),
      h('tbody', (d.scores || []).map(s => h('tr' + (s.option === d.best ? '.best' : ''),
        h('td', '[' + s.option + ']'), h('td', s.mean.toFixed(2)), h('td', s.min.toFixed(2)), h('td', s.max.toFixed(2)), h('td', String(s.count)))))),
    (d.ratings || []).some(r => r.comment) ? h('details', h('summary', 'rater comments'),
      h('ul', d.ratings.filter(r => r.comment).map(r => h('li', `rater ${r.rater} on [${r.option_index}] ${r.rating}: `, r.comment)))) : null),
  choice: d => block('choice', 'Chosen action' + (d.index != null && d.index >= 0 ? ' [' + d.index + ']' : '') +
      (d.mean != null ? ' · rated ' + Number(d.mean).toFixed(2) : ''),
    d.option && d.option.content ? h('div.text', d.option.content) : null,
    describeCall(d.option && d.option.call),
    d.note ? h('div.muted', d.note) : null),
  tool_output: d => block('tool' + (d.failed ? '.failed' : ''), 'Tool output: ' + (d.tool || '') + (d.failed ? ' (failed)' : ''),
    fold(d.output, {cls: '.out'}), d.notice ? h('div.muted', d.notice) : null),
  warning: d => block('warning', 'Warning', h('div.text', d.message || d.summary || '')),
  subagents: d => block('subagents', 'Subagents',
    h('ul', (d.agents || []).map(a => h('li', a.run_id ? h('a', {href: '#/runs/' + a.run_id}, a.id || a.run_id) : (a.id || ''),
      ' ', h('span.badge.s-' + a.status, a.status), ' ', a.task || '', a.conclusion ? h('div.text', 'conclusion: ' + a.conclusion) : null,
      a.error ? h('div.warn', a.error) : null)))),
  tournament: d => block('tournament', 'Tournament round ' + (d.round ?? ''),
    h('ul', (d.matches || []).map(m => h('li', `${m.a}${m.b ? ' vs ' + m.b : ''} → ${m.winner} (${m.how})`,
      m.reasoning ? h('div.muted', m.reasoning) : null)))),
  conclusion: d => block('conclusion', 'Conclusion', h('div.text', d.conclusion || ''), d.report ? fold(d.report) : null),
  submission: d => block('submission', 'Submission', h('div.answer', d.answer !== undefined ? String(d.answer) : JSON.stringify(d))),
  score: d => block('score', 'Score', h('div.answer', d.score !== undefined ? String(d.score) : JSON.stringify(d)),
    d.message ? h('div.muted', d.message) : null),
  operator_message: d => block('operator', 'Operator message', h('div.text', d.content || d.summary || '')),
  message: d => block('message.role-' + (d.role || 'x'), (d.role || 'message'), fold(d.content || ''),
    (d.tool_calls || []).map(c => describeCall({name: c.name, arguments: c.arguments}))),
};

function generic(e) {
  const d = e.data;
  const summary = d && typeof d === 'object' && d.summary ? d.summary : null;
  return block('other', e.type, summary ? h('div.text', summary) : null, lazyJSON('data', d));
}

// Transcript renders entries into el, keeping what later entries annotate
// (ratings on the options they rate).
export class Transcript {
  constructor(el) {
    this.el = el;
    this.lastOptions = null;
    this.count = 0;
  }

  // into renders entries into el (another element than the
  // transcript's own, keeping its annotations) and returns el.
  into(el, entries) {
    for (const e of entries) el.append(this.render(e));
    return el;
  }

  // add appends entries (in seq order) in one DOM update.
  add(entries) {
    const frag = document.createDocumentFragment();
    for (const e of entries) frag.append(this.render(e));
    this.count += entries.length;
    // Past a few hundred entries, those off screen are not laid out
    // (content-visibility): 5,000 entries render in about a second.
    if (this.count > 300) this.el.classList.add('big');
    this.el.append(frag);
  }

  render(e) {
    const r = renderers[e.type];
    let body;
    try {
      body = r && e.data && typeof e.data === 'object' ? r(e.data) : generic(e);
    } catch {
      body = generic(e);
    }
    const el = h('div.entry', {dataset: {seq: String(e.seq), type: e.type}},
      h('div.meta', h('span.seq', '#' + e.seq), e.step ? h('span', 'step ' + e.step) : null, e.phase ? h('span', e.phase) : null),
      body);
    if (e.type === 'options') this.lastOptions = el;
    if (e.type === 'ratings' && this.lastOptions) this.annotate(this.lastOptions, e.data);
    if (e.type === 'choice' && this.lastOptions && e.data && e.data.index != null) {
      const li = this.lastOptions.querySelector(`li.option[data-index="${e.data.index}"]`);
      if (li) li.classList.add('chosen');
    }
    return el;
  }

  annotate(optionsEl, d) {
    for (const s of (d && d.scores) || []) {
      const li = optionsEl.querySelector(`li.option[data-index="${s.option}"]`);
      if (!li) continue;
      li.querySelector('.opt-score').textContent = ` rated ${s.mean.toFixed(2)} (n=${s.count})`;
      if (s.option === d.best) li.classList.add('best');
    }
  }
}
