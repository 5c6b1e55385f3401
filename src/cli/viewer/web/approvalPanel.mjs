// A run that waits for a person: what asks and why, the staged diff they are deciding on (files, SQL, MCP
// calls), and Approve / Reject, sent to the viewer (POST, same origin, with the page's token), which passes the
// decision to the run through Temporal. Below it, the decisions the run already got.
import { api, config, h, postJson, text, when } from './dom.mjs';

const iso = (ms) => (typeof ms === 'number' ? when(new Date(ms).toISOString()) : '?');

function diffLines(diff) {
  return diff.split('\n').map((l) => {
    const cls =
      l.startsWith('+') && !l.startsWith('+++')
        ? 'add'
        : l.startsWith('-') && !l.startsWith('---')
          ? 'del'
          : 'ctx';
    return h(`span.dl.${cls}`, l);
  });
}

function stagedSection(staged) {
  if (!staged) return h('p.hint', 'Nothing staged yet.');
  return h(
    'div.staged',
    staged.files.map((f) =>
      h(
        'div.filediff',
        h('div.diffhead', f.summary || `${f.op} ${f.path}`),
        f.diff ? h('pre', diffLines(f.diff)) : null,
      ),
    ),
    staged.sql.length
      ? h(
          'div',
          h('h4', 'SQL'),
          staged.sql.map((s) => h('pre.sql', s)),
        )
      : null,
    staged.mcp.length
      ? h(
          'div',
          h('h4', 'MCP calls'),
          staged.mcp.map((m) => h('pre.mcp', m)),
        )
      : null,
    !staged.files.length && !staged.sql.length && !staged.mcp.length ? h('p.hint', 'Nothing staged.') : null,
  );
}

function subjectOf(a) {
  const s = a.subject ?? {};
  if (a.kind === 'commit') return null;
  const name = a.kind === 'mcp' ? `${s.server}/${s.tool}` : s.tool;
  return h(
    'div.subject',
    h('h4', `The ${a.kind === 'mcp' ? 'MCP call' : 'tool call'} waiting`),
    h('pre', `${name}(${text(s.args)})`),
  );
}

/** Polls the run until the tape shows the decision taken (or a minute passes), then calls `done`. */
async function followUp(runId, approvalId, done) {
  for (let i = 0; i < 120; i++) {
    await new Promise((r) => setTimeout(r, 500));
    try {
      const run = await api(`/api/runs/${encodeURIComponent(runId)}`);
      if (run.waiting?.id !== approvalId) return done();
    } catch {
      // A tape being appended to can be caught mid-write: try again.
    }
  }
  done();
}

export function waitingPanel(runId, run, onDecided) {
  const a = run.waiting;
  const result = h('p.decision-result', { role: 'status', 'aria-live': 'polite' });
  const by = h('input.decider', {
    type: 'text',
    name: 'by',
    'aria-label': 'decide as',
    placeholder: 'your name',
  });
  const note = h('textarea.note', {
    name: 'note',
    rows: 2,
    'aria-label': 'note',
    placeholder: 'a note with an approval; the reason for a rejection',
  });
  const editable = a.kind !== 'commit';
  const args = editable
    ? h(
        'textarea.args',
        { name: 'args', rows: 4, 'aria-label': 'arguments to run with' },
        text(a.subject?.args ?? {}),
      )
    : null;
  const approveBtn = h('button.approve', { type: 'button' }, 'Approve');
  const rejectBtn = h('button.reject', { type: 'button' }, 'Reject');
  const form = h(
    'div.decide',
    h('label', 'Decide as ', by),
    h('label.notebox', note),
    editable ? h('label.argsbox', 'Arguments (edit to run the call with others)', args) : null,
    h('div.buttons', approveBtn, ' ', rejectBtn),
    result,
  );
  config()
    .then((c) => {
      by.value = c.decider ?? '';
      if (!c.decisions) {
        approveBtn.disabled = true;
        rejectBtn.disabled = true;
        result.textContent = `This viewer only reads (--read-only). Decide with: jbx approve ${run.header.workflowId}`;
      }
    })
    .catch(() => {});
  async function send(verdict) {
    result.textContent = '';
    result.className = 'decision-result';
    const body = { approvalId: a.id, verdict, by: by.value.trim(), note: note.value };
    if (editable && verdict === 'approve') {
      try {
        const edited = JSON.parse(args.value);
        if (JSON.stringify(edited) !== JSON.stringify(a.subject?.args ?? {})) body.args = edited;
      } catch (err) {
        result.textContent = `The arguments are not JSON: ${err.message}`;
        result.classList.add('bad');
        return;
      }
    }
    if (!body.by) {
      result.textContent = 'Say who decides.';
      result.classList.add('bad');
      return;
    }
    approveBtn.disabled = true;
    rejectBtn.disabled = true;
    try {
      const c = await config();
      const r = await postJson(`/api/runs/${encodeURIComponent(runId)}/decision`, body, c.token);
      result.textContent =
        r.via === 'signal'
          ? `${verdict === 'approve' ? 'Approved' : 'Rejected'} as ${body.by}: no worker took it yet; the run takes it when a worker picks it up.`
          : `${verdict === 'approve' ? 'Approved' : 'Rejected'} as ${body.by}: the run took it.`;
      result.classList.add('ok');
      followUp(runId, a.id, onDecided);
    } catch (err) {
      result.textContent = err.message;
      result.classList.add('bad');
      approveBtn.disabled = false;
      rejectBtn.disabled = false;
    }
  }
  approveBtn.addEventListener('click', () => send('approve'));
  rejectBtn.addEventListener('click', () => send('reject'));
  return h(
    'section.approval',
    { 'aria-label': 'waiting for a person', 'data-approval': a.id },
    h('h2', 'Waiting for a person'),
    h('p.reason', a.reason),
    h(
      'p.facts',
      `approval ${a.id} at step ${a.step} · asked ${iso(a.requestedAtMs)} · deadline ${iso(a.deadlineMs)} (then ${a.onTimeout}) · `,
      a.deciders ? `deciders: ${a.deciders.join(', ')}` : 'anyone may decide',
    ),
    subjectOf(a),
    h('h3', 'Staged, waiting on this decision'),
    stagedSection(a.staged),
    form,
  );
}

export function decisionsList(run) {
  const decided = run.approvals.filter((a) => a.outcome);
  if (!decided.length) return null;
  return h(
    'section.decisions',
    h('h3', `Decisions (${decided.length})`),
    h(
      'ul',
      decided.map((a) =>
        h(
          `li.decision.${a.outcome.outcome}`,
          { 'data-approval': a.id },
          h('span.line', a.line),
          ' ',
          h('span.why', a.reason),
        ),
      ),
    ),
  );
}
