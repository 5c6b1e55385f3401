// Replays a model response chunk by chunk at its recorded timing: each chunk appears at its recorded offset
// from the request (divided by the speed), so time to first token and the gaps between chunks look as they did.

import { h } from './dom.mjs';

export function playback(chunks, finalText) {
  const out = h('pre.stream-text');
  const status = h('span.stream-status');
  const n = chunks.length;
  let shown = 0;
  let speed = 1;
  let timer = null;
  let wallStart = 0;
  let origin = 0;
  const root = h('div.playback', { 'data-state': 'idle', 'data-shown': '0', 'data-total': String(n) });
  const span = n ? chunks[n - 1].offsetMs : 0;

  const setState = (state) => {
    root.dataset.state = state;
    play.disabled = state === 'playing';
    pause.disabled = state !== 'playing';
  };
  const update = () => {
    root.dataset.shown = String(shown);
    const at = shown ? chunks[shown - 1].offsetMs : 0;
    status.textContent = `chunk ${shown}/${n} · ${at} ms of ${span} ms recorded`;
  };
  const showNext = () => {
    const c = chunks[shown++];
    if (c.text) out.append(document.createTextNode(c.text));
    update();
  };
  const schedule = () => {
    clearTimeout(timer);
    if (shown >= n) {
      timer = null;
      setState('done');
      return;
    }
    const due = (chunks[shown].offsetMs - origin) / speed - (performance.now() - wallStart);
    timer = setTimeout(
      () => {
        showNext();
        schedule();
      },
      Math.max(0, due),
    );
  };
  const start = () => {
    // Resume from the last chunk shown: the next one waits its own recorded gap, not the time since the request.
    origin = shown ? chunks[shown - 1].offsetMs : 0;
    wallStart = performance.now();
    setState('playing');
    schedule();
  };
  const play = h('button.play', { type: 'button' }, '▶ Play');
  const pause = h('button.pause', { type: 'button', disabled: true }, '❚❚ Pause');
  play.addEventListener('click', () => {
    if (shown >= n) {
      shown = 0;
      out.replaceChildren();
      update();
    }
    if (speed === Infinity) return instant();
    start();
  });
  pause.addEventListener('click', () => {
    clearTimeout(timer);
    timer = null;
    setState('paused');
  });
  const instant = () => {
    clearTimeout(timer);
    while (shown < n) showNext();
    setState('done');
  };
  const speeds = [
    ['1×', 1],
    ['4×', 4],
    ['instant', Infinity],
  ].map(([label, value]) =>
    h(
      'button.speed',
      { type: 'button', 'data-speed': label, 'aria-pressed': value === 1 ? 'true' : 'false' },
      label,
    ),
  );
  speeds.forEach((b, i) => {
    b.addEventListener('click', () => {
      speed = [1, 4, Infinity][i];
      for (const x of speeds) x.setAttribute('aria-pressed', x === b ? 'true' : 'false');
      if (speed === Infinity && root.dataset.state === 'playing') instant();
      else if (root.dataset.state === 'playing') start();
    });
  });
  update();
  root.append(h('div.controls', play, pause, h('span.speeds', speeds), status), out);
  if (n === 0)
    root.append(
      h(
        'p.note',
        'This response was not streamed: no chunks on the tape.',
        finalText ? ' Its full text is above.' : '',
      ),
    );
  else if (!chunks.some((c) => c.text))
    root.append(h('p.note', `The ${n} chunks carry no text (tool call arguments only).`));
  root.stop = () => clearTimeout(timer);
  return root;
}
