// Two runs side by side: the step alignment of src/timetravel/diff/ (weighted LCS, so inserted and removed steps re-align),
// changed fields highlighted, the first divergence marked and scrolled to.
import { api, clear, cls, errorBox, h, money, text } from './dom.mjs';

const FIELDS = ['provider', 'system', 'prompt', 'args', 'output', 'error', 'tokens', 'cost', 'effects'];
const MARK = { same: '=', changed: '≠', removed: '−', inserted: '+' };

export async function renderDiff(root, params) {
  let list;
  try {
    list = await api('/api/runs');
  } catch (err) {
    clear(root, errorBox(err, 'Cannot list the recordings:'));
    return;
  }
  const a = params.get('a') ?? '';
  const b = params.get('b') ?? '';
  const pick = (name, value) =>
    h(
      `select#pick-${name}`,
      { name },
      h('option', { value: '' }, `run ${name.toUpperCase()}…`),
      list.rows.map((r) =>
        h(
          'option',
          { value: r.id, selected: r.id === value },
          `${r.id} (${r.workflow ?? '?'}, ${r.steps} steps, ${r.outcome})`,
        ),
      ),
    );
  const selA = pick('a', a);
  const selB = pick('b', b);
  const form = h(
    'form.pick',
    h('label', 'A ', selA),
    h('label', 'B ', selB),
    h('button', { type: 'submit' }, 'Compare'),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    location.hash = `#/diff?a=${encodeURIComponent(selA.value)}&b=${encodeURIComponent(selB.value)}`;
  });
  const body = h('div.diff-body');
  clear(root, h('p.crumbs', h('a', { href: '#/' }, '← Recordings')), h('h1', 'Compare two runs'), form, body);
  if (!a || !b) {
    body.append(h('p.hint', 'Pick two runs, for example a run and its fork.'));
    return;
  }
  let d;
  try {
    d = await api(`/api/diff?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
  } catch (err) {
    body.append(errorBox(err, 'Cannot compare:'));
    return;
  }
  const first = d.firstDivergence;
  const verdict =
    first === null
      ? 'The timelines agree step for step.'
      : `First divergence at row ${first}: A step ${d.rows[first].a?.step ?? '–'} vs B step ${d.rows[first].b?.step ?? '–'}.`;
  const c = d.counts;
  const rows = [];
  d.rows.forEach((row, i) => {
    const changed = new Set(row.differences.map((x) => x.field));
    const extra = row.differences.filter((x) => x.field === 'messages');
    if (i === first) rows.push(h('tr.divider', h('td', { colspan: 3 }, '▼ first divergence')));
    rows.push(
      h(
        `tr.drow.${row.status}${i === first ? '.first' : ''}`,
        { id: i === first ? 'first-divergence' : undefined, 'data-status': row.status },
        cell(row.a, changed, 'a', row.status, extra, a),
        h('td.mark', MARK[row.status]),
        cell(row.b, changed, 'b', row.status, extra, b),
      ),
    );
  });
  body.append(
    h('p.verdict', verdict),
    h(
      'table.diff',
      h('colgroup', h('col'), h('col.markcol'), h('col')),
      h('thead', h('tr', side(d.a, 'A', a), h('th.mark'), side(d.b, 'B', b))),
      h('tbody', rows),
    ),
    h(
      'p.footer',
      `${c.same} same · ${c.changed} changed · ${c.removed} only in A · ${c.inserted} only in B · outcome A ${d.a.outcome}, B ${d.b.outcome}`,
    ),
  );
  document.getElementById('first-divergence')?.scrollIntoView({ block: 'center' });
}

function side(s, label, id) {
  return h(
    'th',
    h('div.side', label, ' ', h('a', { href: `#/run/${encodeURIComponent(id)}` }, id)),
    h(
      'div.sum',
      `${s.steps} steps · ${s.tokens.input} in / ${s.tokens.output} out tokens · cost ${money(s.cost)} · `,
      h(`span.badge.${cls(s.outcome)}`, s.outcome),
    ),
    s.parent ? h('div.sum', `fork of ${s.parent.tapeId} at step ${s.parent.forkStep}`) : null,
    s.result !== undefined ? h('div.sum.result', 'result: ', text(s.result)) : null,
  );
}

function cell(s, changed, which, status, extra, id) {
  if (!s) return h(`td.step.empty.${which}`, status === 'inserted' ? 'only in B' : 'only in A');
  const titleChanged = changed.has('model') || changed.has('tool') || changed.has('kind');
  const fields = FIELDS.filter((k) => s[k] !== undefined && !(Array.isArray(s[k]) && s[k].length === 0))
    .filter((k) => s.kind === 'llm' || (k !== 'tokens' && k !== 'cost'))
    .map((k) => {
      const v =
        k === 'tokens'
          ? `${s.tokens.input} in / ${s.tokens.output} out`
          : k === 'cost'
            ? money(s.cost)
            : text(s[k]);
      return h(`div.f${changed.has(k) ? '.changed' : ''}`, h('span.k', k), ' ', h('span.v', v));
    });
  return h(
    `td.step.${which}`,
    h(
      `div.title${titleChanged ? '.changed' : ''}`,
      h('a', { href: `#/run/${encodeURIComponent(id)}/step/${s.step}` }, `#${s.step}`),
      ' ',
      s.kind,
      ' ',
      h('b', s.name),
    ),
    fields,
    extra.map((x) =>
      h('div.f.changed', h('span.k', x.field), ' ', h('span.v', text(which === 'a' ? x.a : x.b))),
    ),
  );
}
