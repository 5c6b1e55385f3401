// The recordings list: what `jbx ls` shows, with its filters (outcome, since, workflow, sort, limit) kept in
// the URL so a filtered list can be bookmarked, and two runs picked for comparison.
import { api, bytes, clear, cls, errorBox, h, money, when } from './dom.mjs';

const OUTCOMES = ['completed', 'failed', 'cancelled', 'running', 'tripped', 'rolled-back', 'damaged'];
const FILTERS = ['outcome', 'since', 'workflow', 'sort', 'limit'];

export async function renderList(root, params) {
  const query = new URLSearchParams();
  for (const k of FILTERS) if (params.get(k)) query.set(k, params.get(k));
  let data;
  let all;
  try {
    [data, all] = await Promise.all([api(`/api/runs?${query}`), api('/api/runs')]);
  } catch (err) {
    clear(root, filterForm(params, []), errorBox(err, 'Cannot list the recordings:'));
    return;
  }
  const workflows = [...new Set(all.rows.map((r) => r.workflow).filter(Boolean))].sort();
  const picked = new Set();
  const compare = h('button.compare', { type: 'button', disabled: true }, 'Compare 2 selected');
  compare.addEventListener('click', () => {
    const [a, b] = [...picked];
    location.hash = `#/diff?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`;
  });
  const rows = data.rows.map((r) => {
    const box = h('input', { type: 'checkbox', 'aria-label': `select ${r.id}` });
    box.addEventListener('change', () => {
      if (box.checked) picked.add(r.id);
      else picked.delete(r.id);
      compare.disabled = picked.size !== 2;
    });
    return h(
      'tr.run',
      { 'data-id': r.id, 'data-outcome': r.outcome, 'data-rolled-back': r.rolledBack ? r.rolledBack.by : '' },
      h('td', box),
      h('td.id', h('a', { href: `#/run/${encodeURIComponent(r.id)}` }, r.id)),
      h('td', r.workflow ?? '?'),
      h('td', when(r.started)),
      h('td.num', r.steps),
      h('td.num', r.frames),
      h(
        'td',
        h(`span.badge.${cls(r.outcome)}`, r.outcome),
        r.rolledBack ? h('span.badge.rolledback', 'rolled back') : null,
        r.tripped ? h('span.badge.tripped', 'breaker') : null,
        r.rolledBack ? h('div.rollback', `step ${r.rolledBack.step}: ${r.rolledBack.reason}`) : null,
        r.problem ? h('div.problem', r.problem) : null,
      ),
      h('td.num', r.tokens),
      h('td.num', money(r.cost)),
      h('td.num', bytes(r.bytes)),
    );
  });
  clear(
    root,
    h('h1', 'Recordings'),
    filterForm(params, workflows),
    h('p.count', `${data.rows.length} of ${data.total} runs`, ' · ', compare),
    data.rows.length
      ? h(
          'table.runs',
          h(
            'thead',
            h(
              'tr',
              ['', 'run', 'workflow', 'started', 'steps', 'frames', 'outcome', 'tokens', 'cost', 'bytes'].map(
                (c) => h('th', c),
              ),
            ),
          ),
          h('tbody', rows),
        )
      : h('p.empty', data.total ? 'No run matches these filters.' : `No tapes in ${data.dir}.`),
  );
}

function filterForm(params, workflows) {
  const field = (label, input) => h('label', h('span', label), input);
  const outcome = h(
    'select#f-outcome',
    { name: 'outcome' },
    h('option', { value: '' }, 'any'),
    OUTCOMES.map((o) => h('option', { value: o, selected: params.get('outcome') === o }, o)),
  );
  const since = h('input#f-since', {
    name: 'since',
    placeholder: '2h, 7d, 2026-12-01',
    value: params.get('since') ?? '',
    size: 14,
  });
  const workflow = h(
    'select#f-workflow',
    { name: 'workflow' },
    h('option', { value: '' }, 'any'),
    workflows.map((w) => h('option', { value: w, selected: params.get('workflow') === w }, w)),
  );
  const sort = h(
    'select#f-sort',
    { name: 'sort' },
    h('option', { value: '' }, 'name'),
    ['started', 'cost', 'steps'].map((s) => h('option', { value: s, selected: params.get('sort') === s }, s)),
  );
  const limit = h('input#f-limit', {
    name: 'limit',
    type: 'number',
    min: 1,
    value: params.get('limit') ?? '',
    size: 5,
  });
  const form = h(
    'form.filters',
    field('outcome', outcome),
    field('since', since),
    field('workflow', workflow),
    field('sort', sort),
    field('limit', limit),
    h('button', { type: 'submit' }, 'Filter'),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const q = new URLSearchParams();
    for (const el of [outcome, since, workflow, sort, limit])
      if (el.value.trim()) q.set(el.name, el.value.trim());
    location.hash = `#/?${q}`;
  });
  for (const el of [outcome, workflow, sort]) el.addEventListener('change', () => form.requestSubmit());
  return form;
}
