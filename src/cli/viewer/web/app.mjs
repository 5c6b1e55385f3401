// jbx view: a hash router over four pages. Plain ES modules, no build step, no framework.

import { renderDiff } from './diffPage.mjs';
import { clear, config, errorBox } from './dom.mjs';
import { renderList } from './listView.mjs';
import { renderRun, stopLive } from './runPage.mjs';

const root = document.getElementById('app');

function parse(hash) {
  const raw = hash.replace(/^#/, '') || '/';
  const [path, query = ''] = raw.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { parts, params: new URLSearchParams(query) };
}

async function route() {
  const { parts, params } = parse(location.hash);
  for (const a of document.querySelectorAll('nav a'))
    a.classList.toggle('active', a.dataset.nav === (parts[0] === 'diff' ? 'diff' : parts[0] ? '' : 'list'));
  try {
    if (parts[0] === 'run' && parts[1]) {
      const pick =
        parts[2] === 'row'
          ? { row: Number(parts[3]) }
          : parts[2] === 'step'
            ? { step: Number(parts[3]) }
            : undefined;
      await renderRun(root, parts[1], pick);
    } else if (parts[0] === 'diff') {
      stopLive();
      await renderDiff(root, params);
    } else {
      stopLive();
      await renderList(root, params);
    }
  } catch (err) {
    clear(root, errorBox(err, 'The viewer failed on this page:'));
  }
  document.body.dataset.ready = location.hash || '#/';
}

config()
  .then((c) => {
    document.getElementById('served-dir').textContent = c.dir;
  })
  .catch(() => {});
window.addEventListener('hashchange', route);
route();
