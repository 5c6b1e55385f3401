// DOM building without HTML strings: every value from a tape goes in through textContent or an attribute,
// never innerHTML, so a tape cannot inject markup or script into the page.

/** h('div.cls#id', { attr: v, onclick: fn }, child, ...): children are nodes, strings or arrays of them. */
export function h(spec, attrs, ...children) {
  const [, tag = 'div', rest = ''] = /^([a-z0-9]*)(.*)$/i.exec(spec);
  const el = document.createElement(tag || 'div');
  for (const part of rest.match(/[.#][^.#]+/g) ?? []) {
    if (part[0] === '.') el.classList.add(part.slice(1));
    else el.id = part.slice(1);
  }
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = undefined;
  }
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
    else if (k === 'href') el.setAttribute('href', safeHref(String(v)));
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Only in-page routes and http(s) links: a `javascript:` URL from a tape never becomes a link. */
export function safeHref(href) {
  if (href.startsWith('#')) return href;
  try {
    const u = new URL(href, location.href);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : '#';
  } catch {
    return '#';
  }
}

/** A tape value made safe to use as a class name in an `h()` spec (no `.` or `#` that would add classes or an id). */
export function cls(v) {
  return String(v).replace(/[^\w-]/g, '-') || '-';
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// Characters JSON leaves raw that change how the text around them reads (C1 controls, bidi marks, overrides and
// isolates, zero-width and line separators, the BOM): escaped as \uHHHH, as src/errors/printable.ts does.
const HIDDEN = /[\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]/g;

export function text(v) {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  return JSON.stringify(v, null, 2).replace(
    HIDDEN,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

export function money(v) {
  if (v === null || v === undefined) return '–';
  const n = Number(v);
  return n !== 0 && Math.abs(n) < 0.0001 ? `$${n.toPrecision(2)}` : `$${n.toFixed(4)}`;
}

export function ms(us) {
  const m = us / 1000;
  return m >= 1000 ? `${(m / 1000).toFixed(2)} s` : `${m >= 10 ? m.toFixed(0) : m.toFixed(1)} ms`;
}

export function bytes(n) {
  return n >= 1048576
    ? `${(n / 1048576).toFixed(1)} MiB`
    : n >= 1024
      ? `${(n / 1024).toFixed(1)} KiB`
      : `${n} B`;
}

export function when(iso) {
  return iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '?';
}

export async function api(path) {
  const res = await fetch(path, { headers: { accept: 'application/json' } });
  let body;
  try {
    body = await res.json();
  } catch {
    throw new Error(`${path}: the viewer answered ${res.status} without JSON`);
  }
  if (!res.ok) throw new Error(body?.error ?? `${path}: HTTP ${res.status}`);
  return body;
}

let configPromise;
/** The viewer's /api/config, fetched once: the folder, the Temporal UI, and whether (and as whom) it decides. */
export function config() {
  configPromise ??= api('/api/config');
  return configPromise;
}

/** A decision to the viewer: JSON, same origin, with the token the page read from /api/config. */
export async function postJson(path, value, token) {
  const res = await fetch(path, {
    method: 'POST',
    headers: {
      accept: 'application/json',
      'content-type': 'application/json',
      'x-jukebox-token': token ?? '',
    },
    body: JSON.stringify(value),
  });
  let body;
  try {
    body = await res.json();
  } catch {
    throw new Error(`${path}: the viewer answered ${res.status} without JSON`);
  }
  if (!res.ok) throw new Error(body?.error ?? `${path}: HTTP ${res.status}`);
  return body;
}

export function errorBox(err, what) {
  return h(
    'div.error-box',
    { role: 'alert' },
    h('strong', what),
    ' ',
    err instanceof Error ? err.message : String(err),
  );
}
