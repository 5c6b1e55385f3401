// One run: its header and verification status, the timeline of steps (kind, timing bar, tokens, cost, effect
// marks), and the selected step's panel.
import { decisionsList, waitingPanel } from './approvalPanel.mjs';
import { api, bytes, clear, cls, errorBox, h, money, ms, when } from './dom.mjs';
import { followLive } from './livePanel.mjs';
import { stepPanel } from './stepPanel.mjs';

let current = null; // { id, run, rowsEl, panel, selected }
let live = null; // { id, follower, timer }: the run being followed as it records

/** Stops following a live run (the page moved to another view). */
export function stopLive() {
  if (!live) return;
  clearTimeout(live.timer);
  live.follower.close();
  live = null;
}

/**
 * A run without an outcome whose tape reads cleanly may still be recording: follow it from its last frame.
 * The panel survives the page's rebuilds (each finished step reads the run again, so the timeline grows).
 */
function liveFollower(root, id, run) {
  if (live && live.id !== id) stopLive();
  if (live) return live.follower.el;
  const v = run.verification;
  if (run.outcome || v.sealed || v.status === 'damaged') return null;
  const refresh = () => {
    if (!live || live.id !== id) return;
    clearTimeout(live.timer);
    // Debounced: a burst of short steps reads the tape once.
    live.timer = setTimeout(() => {
      if (!current || current.id !== id || !root.contains(current.rowsEl)) return;
      const row = current.selected;
      current = null;
      renderRun(root, id, row === null ? undefined : { row });
    }, 250);
  };
  live = {
    id,
    timer: undefined,
    follower: followLive(id, run.frameCount - 1, { onStep: refresh, onEnd: refresh }),
  };
  return live.follower.el;
}

export async function renderRun(root, id, pick) {
  if (!current || current.id !== id || !root.contains(current.rowsEl)) {
    let run;
    try {
      run = await api(`/api/runs/${encodeURIComponent(id)}`);
    } catch (err) {
      current = null;
      clear(root, h('p', h('a', { href: '#/' }, '← Recordings')), errorBox(err, `Cannot open run ${id}:`));
      return;
    }
    // Marks for the bench and for anyone profiling a long run: data in hand, then rows built.
    performance.mark('jbx:run-fetched');
    current = build(root, id, run, liveFollower(root, id, run));
    // The list only adds links to related runs: fetched after the run is on screen, never before it.
    const built = current;
    api('/api/runs')
      .then((list) => {
        if (current === built) relatedLinks(built, list);
      })
      .catch(() => {});
    performance.mark('jbx:run-built');
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

/** Links to the run's parent and forks, once the recordings list is in. */
function relatedLinks(c, list) {
  const h0 = c.run.header;
  if (!h0) return;
  const parent = h0.parent ? list.rows.find((r) => r.tapeId === h0.parent.tapeId) : null;
  const forks = list.rows.filter((r) => r.id !== c.id && r.workflowId?.startsWith(`${h0.workflowId}.fork-`));
  const e = encodeURIComponent;
  if (parent)
    c.links.append(
      h(
        'a.button.compare-parent',
        { href: `#/diff?a=${e(parent.id)}&b=${e(c.id)}` },
        'Compare with parent run',
      ),
    );
  for (const f of forks)
    c.links.append(
      h('a.button.compare-fork', { href: `#/diff?a=${e(c.id)}&b=${e(f.id)}` }, `Compare with fork ${f.id}`),
    );
}

// One row, cloned per step: cloning a built node costs far less than building ~15 nodes 2,000 times.
const ROW = h(
  'li.row',
  { role: 'option', 'aria-selected': 'false' },
  h(
    'a.rowlink',
    h('span.n'),
    h('span.kind'),
    h('span.label'),
    h('span.bar', h('span.fill')),
    h('span.dur'),
    h('span.tok'),
    h('span.cost'),
    h('span.marks'),
    h('span.preview'),
  ),
);

function rowItem(id, r, t0, span) {
  const li = ROW.cloneNode(true);
  li.className = `row ${r.kind} ${r.status}`;
  li.dataset.i = r.i;
  li.dataset.step = r.step;
  li.dataset.kind = r.kind;
  const a = li.firstChild;
  a.setAttribute('href', `#/run/${encodeURIComponent(id)}/row/${r.i}`);
  const [n, kind, label, bar, dur, tok, cost, marks, preview] = a.children;
  n.textContent = `#${r.step}`;
  kind.textContent = r.kind;
  kind.className = `kind ${r.kind}`;
  label.textContent = r.attempts > 1 ? `${r.label} (${r.attempts} attempts)` : r.label;
  const left = Math.min(((r.startUs - t0) / span) * 100, 99.6);
  const width = Math.min(Math.max(0.4, ((r.endUs - r.startUs) / span) * 100), 100 - left);
  bar.firstChild.style.left = `${left}%`;
  bar.firstChild.style.width = `${width}%`;
  dur.textContent = ms(r.endUs - r.startUs);
  if (r.tokens) tok.textContent = `${r.tokens.input}→${r.tokens.output} tok`;
  if (r.cost !== null) cost.textContent = money(r.cost);
  for (const m of r.marks) marks.append(h(`span.mark.${m.replace(/\W/g, '-')}`, m));
  preview.textContent = r.error ? `✗ ${r.error}` : r.preview;
  return li;
}

function build(root, id, run, livePanel) {
  const h0 = run.header;
  const span = Math.max(1, run.endUs - run.startUs);
  const rowsEl = h('ol.timeline', { role: 'listbox', 'aria-label': 'steps' });
  const links = h(
    'div.links',
    run.temporalUrl
      ? h(
          'a.temporal',
          { href: run.temporalUrl, target: '_blank', rel: 'noopener noreferrer' },
          'Open in Temporal Web UI ↗',
        )
      : null,
  );
  const items = run.rows.map((r) => rowItem(id, r, run.startUs, span));
  rowsEl.append(...items);
  const v = run.verification;
  const panel = h('section.panel', { 'aria-label': 'step' });
  const outcome = run.outcome
    ? h(
        'span',
        h(`span.badge.${cls(run.outcome.status)}`, run.outcome.status),
        run.rolledBack ? h('span.badge.rolledback', 'rolled back') : null,
        run.rolledBack
          ? h('span.rollback', ` at step ${run.rolledBack.step}: ${run.rolledBack.reason}`)
          : null,
        run.outcome.error
          ? h('span.oerr', ` ${run.outcome.error.message ?? JSON.stringify(run.outcome.error)}`)
          : null,
      )
    : run.waiting
      ? h('span.badge.waiting', 'waiting for a person')
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
      links,
      verificationBanner(v, run),
    ),
    run.waiting
      ? waitingPanel(id, run, () => {
          // The decision is on the tape: read the run again and show what it did with it.
          if (current?.id === id) current = null;
          renderRun(root, id);
        })
      : null,
    decisionsList(run),
    livePanel,
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
  return { id, run, rowsEl, panel, links, selected: null };
}

// j / k (or the arrow keys) walk the timeline of the open run.
document.addEventListener('keydown', (e) => {
  if (!current || e.altKey || e.ctrlKey || e.metaKey || /^(INPUT|SELECT|TEXTAREA)$/.test(e.target.tagName))
    return;
  const step = { j: 1, ArrowDown: 1, k: -1, ArrowUp: -1 }[e.key];
  if (!step || !document.body.contains(current.rowsEl)) return;
  const next = Math.min(current.run.rows.length - 1, Math.max(0, (current.selected ?? -1) + step));
  if (next === current.selected || next < 0) return;
  e.preventDefault();
  location.hash = `#/run/${encodeURIComponent(current.id)}/row/${next}`;
});
