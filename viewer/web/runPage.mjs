// One run: its header and verification status, the timeline of steps (kind, timing bar, tokens, cost, effect
// marks), and the selected step's panel.
import { api, bytes, clear, errorBox, h, money, ms, when } from './dom.mjs';
import { stepPanel } from './stepPanel.mjs';

let current = null; // { id, run, rowsEl, panel, selected }

export async function renderRun(root, id, pick) {
  if (!current || current.id !== id || !root.contains(current.rowsEl)) {
    let run;
    let list;
    try {
      [run, list] = await Promise.all([
        api(`/api/runs/${encodeURIComponent(id)}`),
        api('/api/runs').catch(() => null),
      ]);
    } catch (err) {
      current = null;
      clear(root, h('p', h('a', { href: '#/' }, '← Recordings')), errorBox(err, `Cannot open run ${id}:`));
      return;
    }
    current = build(root, id, run, list);
  }
  const run = current.run;
  let i = null;
  if (pick?.row !== undefined) i = pick.row;
  else if (pick?.step !== undefined)
    i = run.rows.findIndex((r) => r.step === pick.step && (r.kind === 'llm' || r.kind === 'tool'));
  if (i === null || i < 0 || i >= run.rows.length) {
    select(null);
    clear(
      current.panel,
      h(
        'p.hint',
        run.rows.length
          ? 'Pick a step to see its conversation, tool calls and effects.'
          : 'No steps could be read from this tape.',
      ),
    );
    return;
  }
  select(i);
  const panel = current.panel;
  clear(panel, h('p.loading', 'Loading step…'));
  try {
    const detail = await api(`/api/runs/${encodeURIComponent(id)}/rows/${i}`);
    if (current?.selected !== i) return;
    clear(panel, stepPanel(detail, run));
  } catch (err) {
    clear(panel, errorBox(err, `Cannot read step row ${i}:`));
  }
}

function select(i) {
  if (!current) return;
  const prev = current.rowsEl.querySelector('.row.selected');
  prev?.classList.remove('selected');
  prev?.setAttribute('aria-selected', 'false');
  current.selected = i;
  if (i === null) return;
  const el = current.rowsEl.children[i];
  el?.classList.add('selected');
  el?.setAttribute('aria-selected', 'true');
  el?.scrollIntoView({ block: 'nearest' });
}

function verificationBanner(v, run) {
  if (v.status === 'intact')
    return h(
      'div.verify.ok',
      { 'data-status': 'intact' },
      h('strong', '✓ Chain intact'),
      ` — all ${run.frameCount} frames verified (BLAKE3 per frame, hash chain)`,
      v.sealed ? ', sealed.' : '; not sealed: the run is still recording or was cut off before its outcome.',
    );
  if (v.status === 'torn-tail')
    return h(
      'div.verify.warn',
      { 'data-status': 'torn-tail' },
      h('strong', '⚠ Torn tail'),
      ` — ${v.reason}. The ${v.verifiedFrames} frames before it verified and are shown.`,
    );
  return h(
    'div.verify.bad',
    { 'data-status': 'damaged', role: 'alert' },
    h('strong', '✗ Tape damaged'),
    v.firstBadFrame !== null
      ? h('span.where', ` — frame ${v.firstBadFrame} at byte ${v.offset} failed verification (${v.code}).`)
      : h(
          'span.where',
          ` — the header failed at byte ${v.offset} (${v.code}); nothing in the file can be trusted.`,
        ),
    h('div.reason', v.reason),
    v.firstBadFrame !== null
      ? h('div', `Showing the ${v.verifiedFrames} frames before the fault; nothing after it is displayed.`)
      : null,
  );
}

function build(root, id, run, list) {
  const h0 = run.header;
  const span = Math.max(1, run.endUs - run.startUs);
  const parent = h0?.parent && list ? list.rows.find((r) => r.tapeId === h0.parent.tapeId) : null;
  const forks =
    h0 && list
      ? list.rows.filter((r) => r.id !== id && r.workflowId?.startsWith(`${h0.workflowId}.fork-`))
      : [];
  const rowsEl = h('ol.timeline', { role: 'listbox', 'aria-label': 'steps' });
  const items = run.rows.map((r) => {
    const left = ((r.startUs - run.startUs) / span) * 100;
    const width = Math.max(0.4, ((r.endUs - r.startUs) / span) * 100);
    return h(
      `li.row.${r.kind}.${r.status}`,
      { 'data-i': r.i, 'data-step': r.step, 'data-kind': r.kind, role: 'option', 'aria-selected': 'false' },
      h(
        'a.rowlink',
        { href: `#/run/${encodeURIComponent(id)}/row/${r.i}` },
        h('span.n', `#${r.step}`),
        h(`span.kind.${r.kind}`, r.kind),
        h('span.label', r.label),
        r.attempts > 1 ? h('span.attempts', `${r.attempts} attempts`) : null,
        h(
          'span.bar',
          h('span.fill', {
            style: {
              left: `${Math.min(left, 99.6)}%`,
              width: `${Math.min(width, 100 - Math.min(left, 99.6))}%`,
            },
          }),
        ),
        h('span.dur', ms(r.endUs - r.startUs)),
        h('span.tok', r.tokens ? `${r.tokens.input}→${r.tokens.output} tok` : ''),
        h('span.cost', r.cost !== null ? money(r.cost) : ''),
        h(
          'span.marks',
          r.marks.map((m) => h(`span.mark.${m.replace(/\W/g, '-')}`, m)),
        ),
        h('span.preview', r.error ? `✗ ${r.error}` : r.preview),
      ),
    );
  });
  rowsEl.append(...items);
  const v = run.verification;
  const panel = h('section.panel', { 'aria-label': 'step' });
  const outcome = run.outcome
    ? h(
        'span',
        h(`span.badge.${run.outcome.status}`, run.outcome.status),
        run.outcome.error
          ? h('span.oerr', ` ${run.outcome.error.message ?? JSON.stringify(run.outcome.error)}`)
          : null,
      )
    : h(
        `span.badge.${v.status === 'damaged' ? 'damaged' : 'running'}`,
        v.status === 'damaged' ? 'damaged' : 'no outcome',
      );
  clear(
    root,
    h('p.crumbs', h('a', { href: '#/' }, '← Recordings')),
    h(
      'section.runhead',
      h('h1', h0 ? h0.workflowType : run.file, ' ', h('span.runid', run.id)),
      h0
        ? h(
            'dl.meta',
            h('dt', 'workflow'),
            h('dd', h0.workflowId),
            h('dt', 'run'),
            h('dd', h0.runId),
            h('dt', 'created'),
            h('dd', when(new Date(h0.createdAtMs).toISOString())),
            h('dt', 'task queue'),
            h('dd', h0.taskQueue),
            h('dt', 'outcome'),
            h('dd', outcome),
            h('dt', 'size'),
            h(
              'dd',
              `${run.rows.length} rows · ${run.frameCount} frames · ${run.blobCount} blobs · ${bytes(run.bytes)}`,
            ),
            h('dt', 'tokens · cost'),
            h('dd', `${run.tokens.input} in / ${run.tokens.output} out · ${money(run.cost)}`),
            h('dt', 'duration'),
            h('dd', ms(run.endUs - run.startUs)),
            h0.parent ? h('dt', 'fork of') : null,
            h0.parent ? h('dd', `${h0.parent.tapeId} at step ${h0.parent.forkStep}`) : null,
          )
        : h('p', `file ${run.file}, ${bytes(run.bytes)}`),
      h(
        'div.links',
        run.temporalUrl
          ? h(
              'a.temporal',
              { href: run.temporalUrl, target: '_blank', rel: 'noopener noreferrer' },
              'Open in Temporal Web UI ↗',
            )
          : null,
        parent
          ? h(
              'a.button.compare-parent',
              { href: `#/diff?a=${encodeURIComponent(parent.id)}&b=${encodeURIComponent(id)}` },
              'Compare with parent run',
            )
          : null,
        forks.map((f) =>
          h(
            'a.button.compare-fork',
            { href: `#/diff?a=${encodeURIComponent(id)}&b=${encodeURIComponent(f.id)}` },
            `Compare with fork ${f.id}`,
          ),
        ),
      ),
      verificationBanner(v, run),
    ),
    h(
      'div.split',
      h(
        'section.steps',
        h('h2', `Timeline (${run.rows.length})`),
        rowsEl,
        v.status === 'damaged' && v.firstBadFrame !== null
          ? h(
              'div.fault-row',
              `✗ frame ${v.firstBadFrame}: verification failed here; the tape is not shown past this point`,
            )
          : null,
      ),
      panel,
    ),
  );
  return { id, run, rowsEl, panel, selected: null };
}
