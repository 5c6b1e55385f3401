// A run still recording, followed live: the server's event stream (GET /api/runs/ID/events, one event per
// tape frame that says something, its id the frame's position) drawn as it arrives. The browser's EventSource
// reconnects by itself after a dropped connection or a restarted `jbx view` and sends Last-Event-ID, so the
// feed continues with the next item: nothing missed, nothing twice.
import { h, money } from './dom.mjs';

/** At most this many feed lines stay on the page; older ones are on the timeline. */
const MAX_LINES = 400;

/**
 * Follows run `id` from just after frame `after`. `onStep` is called (debounced by the caller) when a step
 * ended, `onEnd` once the tape is sealed. Returns { el, close }.
 */
export function followLive(id, after, { onStep, onEnd }) {
  const status = h('span.live-status', 'connecting…');
  const text = h('pre.live-text', { 'aria-label': 'streamed model text' });
  const feed = h('ol.live-feed', { 'aria-label': 'live events' });
  const el = h(
    'section.live',
    { 'data-state': 'connecting', 'aria-live': 'polite' },
    h('h2.live-head', h('span.live-dot', '●'), ' Live ', status),
    h('div.live-current', h('span.live-label', 'model: '), text),
    feed,
  );
  let last = after;
  let attempt = null; // the activity attempt whose tokens `text` shows
  const url = `/api/runs/${encodeURIComponent(id)}/events${after >= 0 ? `?after=${after}` : ''}`;
  const source = new EventSource(url);
  const state = (s, label) => {
    el.dataset.state = s;
    status.textContent = label;
  };
  source.onopen = () => state('open', 'following the run as it records');
  source.onerror = () => {
    if (el.dataset.state !== 'ended') state('reconnecting', 'connection lost; reconnecting…');
  };
  source.onmessage = (e) => {
    let item;
    try {
      item = JSON.parse(e.data);
    } catch {
      return;
    }
    // The server resumes after Last-Event-ID; this guard keeps the page right even if an event came twice.
    if (typeof item.position !== 'number' || item.position <= last) return;
    last = item.position;
    el.dataset.last = String(last);
    state('open', 'following the run as it records');
    show(item);
  };
  source.addEventListener('end', () => {
    source.close();
    state('ended', 'the run ended; its tape is sealed');
    onEnd();
  });
  source.addEventListener('failure', (e) => {
    source.close();
    let error = 'the event stream failed';
    try {
      error = JSON.parse(e.data).error ?? error;
    } catch {}
    state('failed', error);
  });

  function line(item, summary) {
    feed.append(
      h(
        `li.ev.${item.kind.replace(/\W/g, '-')}`,
        { 'data-position': String(item.position), 'data-kind': item.kind },
        h('span.ev-n', `#${item.step}`),
        h('span.ev-kind', item.kind),
        h('span.what', summary),
      ),
    );
    while (feed.childElementCount > MAX_LINES) feed.firstElementChild.remove();
  }

  function show(item) {
    const who = `${item.activityId ?? ''}:${item.attempt ?? ''}`;
    switch (item.kind) {
      case 'step':
        attempt = null;
        return line(
          item,
          item.retryOf ? `${item.activityType} (retry, attempt ${item.attempt})` : item.activityType,
        );
      case 'request':
        attempt = who;
        text.textContent = '';
        return line(item, `${item.provider} ${item.model}`);
      case 'token':
        // A retried attempt streams its answer again: start the text over rather than append to the old one.
        if (attempt !== who) {
          attempt = who;
          text.textContent = '';
        }
        text.textContent += item.text;
        return;
      case 'response': {
        const calls = item.toolCalls.map((c) => c.name).join(', ');
        const cost = item.cost === null ? '' : ` · ${money(item.cost)}`;
        return line(item, `${item.stopReason ?? 'done'}${calls ? ` → ${calls}` : ''}${cost}`);
      }
      case 'tool.call':
        return line(item, item.toolName);
      case 'tool.result':
        return line(item, item.isError ? 'error' : 'ok');
      case 'staged':
        return line(item, `${item.effect} ${stagedWhat(item)}`);
      case 'approval':
        return line(item, `${item.event} ${item.id}`);
      case 'step.end':
        line(item, item.status === 'failed' ? `failed${item.willRetry ? ', will retry' : ''}` : 'completed');
        return onStep();
      case 'outcome':
        return line(item, item.status);
      default:
        return line(item, '');
    }
  }

  return { el, close: () => source.close() };
}

function stagedWhat(item) {
  const d = item.detail;
  if (item.effect === 'fs') return `${d.op ?? ''} ${d.path ?? ''}`.trim();
  if (item.effect === 'sql') return String(d.statement ?? '').slice(0, 80);
  if (item.effect === 'shell') return (Array.isArray(d.argv) ? d.argv.join(' ') : '').slice(0, 80);
  return `${d.server ?? ''} ${d.method ?? ''}`.trim();
}
