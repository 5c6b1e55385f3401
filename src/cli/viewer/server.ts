/**
 * `jbx view`'s web server: plain ES modules, HTML and CSS from src/cli/viewer/web, and a small JSON API over the tapes
 * of one folder. It listens on 127.0.0.1 only, answers only to a Host naming this address (a page on another
 * site cannot reach it through DNS rebinding), serves only the files it lists at start, and forbids inline
 * script through its Content-Security-Policy: tape contents are untrusted and reach the page as JSON, rendered
 * as text. It reads with GET/HEAD; the one thing it writes is a person's decision on a run that waits for
 * approval (POST /api/runs/ID/decision, when given a `decide`), and only from its own page: the request must
 * come from this origin (Origin, Sec-Fetch-Site), as JSON (which a cross-site form cannot send without a CORS
 * preflight this server never grants), carrying the token the page read from /api/config (which another
 * origin cannot read). A run still recording is followed live through GET /api/runs/ID/events, a stream of
 * server-sent events (one per item, its position as the event id), resumed after `Last-Event-ID` or `?after=`.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import {
  applyQuery,
  CatalogQueryError,
  parseLimit,
  parseOutcomes,
  parseSince,
  parseSort,
  TapeCatalog,
  type TapeQuery,
} from '../../recorder/catalog';
import { followTape } from '../../stream';
import { temporalRunUrl } from './commandLine';
import { ViewerListenError } from './errors';
import { TapeLibrary, TapeNotServedError } from './tapeLibrary';

export const VIEWER_HOST = '127.0.0.1';
const WEB = path.join(__dirname, 'web');
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** An experiment's page: its own inline CSS, and nothing else (no scripts at all). */
const EXPERIMENT_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export interface ViewerOptions {
  /** The folder of tapes to serve. */
  dir: string;
  /** 0 (default): any free port. */
  port?: number;
  /** Base URL of the Temporal Web UI, e.g. http://127.0.0.1:8233. */
  temporalUi?: string;
  namespace?: string;
  /** Tape ids to read before listening, so the first page that opens them does not wait for the read. */
  preload?: string[];
  /** Sends a person's decision to the run (the Approve / Reject buttons); without it the viewer only reads. */
  decide?: ViewerDecide;
  /** The name the page fills in as who decides. */
  decider?: string;
}

export interface ViewerDecision {
  approvalId: string;
  verdict: 'approve' | 'reject';
  by: string;
  note?: string;
  args?: Record<string, unknown>;
}

export type ViewerDecide = (
  run: { workflowId: string; runId: string },
  d: ViewerDecision,
) => Promise<unknown>;

/** The header that carries the page's decision token. */
export const DECISION_TOKEN_HEADER = 'x-jukebox-token';
const MAX_DECISION_BYTES = 64 * 1024;
/** A comment line this often keeps proxies and browsers from closing a quiet event stream. */
const KEEP_ALIVE_MS = 15_000;

/** Jukebox error codes of a refused decision, and the HTTP status each answers with. */
const DECISION_STATUS: Record<string, number> = {
  APPROVAL_NOT_PENDING: 409,
  APPROVAL_DECIDER_REFUSED: 403,
  APPROVAL_DECISION_INVALID: 400,
  TEMPORAL_UNREACHABLE: 502,
};

class DecisionRefused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const parts: Buffer[] = [];
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_DECISION_BYTES) {
        reject(new DecisionRefused(413, `a decision is at most ${MAX_DECISION_BYTES} bytes`));
        req.destroy();
      } else parts.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

function decisionOf(body: string): ViewerDecision {
  let d: Record<string, unknown>;
  try {
    d = JSON.parse(body) as Record<string, unknown>;
  } catch {
    throw new DecisionRefused(400, 'the decision is not JSON');
  }
  const str = (v: unknown) => typeof v === 'string' && v.trim() !== '';
  if (!d || typeof d !== 'object' || Array.isArray(d))
    throw new DecisionRefused(400, 'a decision is a JSON object');
  if (d.verdict !== 'approve' && d.verdict !== 'reject')
    throw new DecisionRefused(400, 'verdict is approve or reject');
  if (!str(d.approvalId) || !str(d.by)) throw new DecisionRefused(400, 'a decision names approvalId and by');
  if (d.note !== undefined && typeof d.note !== 'string') throw new DecisionRefused(400, 'note is text');
  if (d.args !== undefined && (typeof d.args !== 'object' || d.args === null || Array.isArray(d.args)))
    throw new DecisionRefused(400, 'args is a JSON object');
  return {
    approvalId: String(d.approvalId),
    verdict: d.verdict,
    by: String(d.by).trim(),
    ...(typeof d.note === 'string' && d.note.trim() ? { note: d.note } : {}),
    ...(d.args !== undefined ? { args: d.args as Record<string, unknown> } : {}),
  };
}

export interface Viewer {
  url: string;
  port: number;
  dir: string;
  close(): Promise<void>;
}

function staticFiles(): Map<string, { type: string; body: Buffer }> {
  const files = new Map<string, { type: string; body: Buffer }>();
  for (const name of readdirSync(WEB)) {
    const type = TYPES[path.extname(name)];
    if (type && /^[\w.-]+$/.test(name))
      files.set(`/${name}`, { type, body: readFileSync(path.join(WEB, name)) });
  }
  files.set('/', files.get('/index.html')!);
  return files;
}

function queryOf(params: URLSearchParams): TapeQuery {
  const q: TapeQuery = {};
  const get = (k: string) => params.get(k)?.trim() || undefined;
  const outcome = get('outcome');
  const since = get('since');
  const workflow = get('workflow');
  const sort = get('sort');
  const limit = get('limit');
  if (outcome) q.outcome = parseOutcomes(outcome);
  if (since) q.since = parseSince(since);
  if (workflow) q.workflow = workflow;
  if (sort) q.sort = parseSort(sort);
  if (limit) q.limit = parseLimit(limit);
  return q;
}

export async function startViewer(options: ViewerOptions): Promise<Viewer> {
  const dir = path.resolve(options.dir);
  const ui = options.temporalUi ?? 'http://127.0.0.1:8233';
  const namespace = options.namespace ?? 'default';
  const library = new TapeLibrary(dir, (h) => temporalRunUrl(ui, namespace, h.workflowId, h.runId));
  const catalog = new TapeCatalog({ dir });
  const files = staticFiles();
  // Read by the page from /api/config (same origin only) and sent back with every decision.
  const token = randomBytes(32).toString('hex');
  for (const id of options.preload ?? []) {
    try {
      library.run(id);
    } catch (err) {
      // The page says what is wrong with it when it is opened.
      if (!(err instanceof TapeNotServedError)) throw err;
    }
  }
  let port = 0;

  const send = (
    res: http.ServerResponse,
    status: number,
    type: string,
    body: string | Buffer,
    head = false,
    csp = CSP,
  ) => {
    res.writeHead(status, {
      'content-type': type,
      'content-length': Buffer.byteLength(body),
      'content-security-policy': csp,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cross-origin-resource-policy': 'same-origin',
      'cache-control': 'no-store',
    });
    res.end(head ? undefined : body);
  };
  const json = (res: http.ServerResponse, status: number, value: unknown, head: boolean) =>
    send(res, status, 'application/json; charset=utf-8', JSON.stringify(value), head);

  async function api(url: URL): Promise<unknown> {
    const parts = url.pathname.split('/').slice(2).map(decodeURIComponent);
    if (parts[0] === 'config' && parts.length === 1)
      return {
        dir,
        temporalUi: ui,
        namespace,
        decisions: options.decide !== undefined,
        ...(options.decide ? { token, decider: options.decider ?? '' } : {}),
      };
    if (parts[0] === 'runs' && parts.length === 1) {
      const query = queryOf(url.searchParams);
      const listing = await catalog.list();
      // A symlink in the folder pointing elsewhere is listed by the catalog but never served: drop it before
      // the query's limit counts it.
      const served = listing.rows.filter((r) => library.serves(r.id));
      return {
        dir,
        total: served.length,
        rows: applyQuery(served, query).map(({ file: _file, ...row }) => row),
      };
    }
    if (parts[0] === 'runs' && parts.length === 2) return library.run(parts[1]!);
    if (parts[0] === 'runs' && parts.length === 4 && parts[2] === 'rows') {
      if (!/^\d{1,9}$/.test(parts[3]!))
        throw new TapeNotServedError(`row ${JSON.stringify(parts[3])} is not a number`, 400);
      return library.step(parts[1]!, Number(parts[3]));
    }
    if (parts[0] === 'diff' && parts.length === 1) {
      const a = url.searchParams.get('a');
      const b = url.searchParams.get('b');
      if (!a || !b) throw new TapeNotServedError('diff needs two tape ids: /api/diff?a=ID&b=ID', 400);
      return library.diff(a, b);
    }
    throw new TapeNotServedError(`no such endpoint: ${url.pathname}`, 404);
  }

  /**
   * GET /api/runs/ID/events: the run's items as server-sent events, live until its tape is sealed (then an
   * `end` event). Each event's id is the item's position, so a browser's EventSource that reconnects sends
   * `Last-Event-ID` and continues with the next item: no gap, no duplicate. A failure is an `failure` event.
   */
  async function events(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    id: string,
    url: URL,
    head: boolean,
  ) {
    let file: string;
    try {
      file = library.fileOf(id);
    } catch (err) {
      if (err instanceof TapeNotServedError) return json(res, err.status, { error: err.message }, head);
      throw err;
    }
    const header = req.headers['last-event-id'];
    const raw = (Array.isArray(header) ? header[0] : header) ?? url.searchParams.get('after') ?? '';
    if (raw !== '' && !/^\d{1,15}$/.test(raw.trim()))
      return json(
        res,
        400,
        {
          error: `Last-Event-ID (or after) is the position of an event received, a whole number; got ${JSON.stringify(raw.slice(0, 40))}`,
        },
        head,
      );
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'content-security-policy': CSP,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cross-origin-resource-policy': 'same-origin',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    });
    if (head) return res.end();
    const stop = new AbortController();
    res.on('close', () => stop.abort());
    const write = async (text: string) => {
      // A slow reader holds the follower back instead of the server buffering the run for it.
      if (!res.write(text) && !stop.signal.aborted)
        await Promise.race([once(res, 'drain'), once(stop.signal, 'abort')]);
    };
    const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
    try {
      await write('retry: 1000\n\n');
      const after = raw === '' ? undefined : Number(raw.trim());
      for await (const item of followTape(file, {
        ...(after !== undefined ? { after } : {}),
        signal: stop.signal,
      }))
        await write(`id: ${item.position}\ndata: ${JSON.stringify(item)}\n\n`);
      if (!stop.signal.aborted) await write('event: end\ndata: {}\n\n');
    } catch (err) {
      const e = err as { message?: string; code?: unknown };
      if (!stop.signal.aborted)
        res.write(
          `event: failure\ndata: ${JSON.stringify({ error: e.message ?? String(err), code: e.code ?? null })}\n\n`,
        );
    } finally {
      clearInterval(keepAlive);
      res.end();
    }
  }

  /** POST /api/runs/ID/decision: checks where it comes from, then the run, then sends it to Temporal. */
  async function decision(req: http.IncomingMessage, id: string): Promise<unknown> {
    const decide = options.decide;
    if (!decide) throw new DecisionRefused(405, 'this viewer only reads (started with --read-only)');
    const origin = req.headers.origin;
    if (origin !== `http://${VIEWER_HOST}:${port}` && origin !== `http://localhost:${port}`)
      throw new DecisionRefused(
        403,
        `refused: a decision comes only from this viewer's own page, not ${JSON.stringify(origin ?? 'no origin')}`,
      );
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin')
      throw new DecisionRefused(403, `refused: a ${site} request cannot decide`);
    if (!/^application\/json(;|$)/i.test(req.headers['content-type'] ?? ''))
      throw new DecisionRefused(415, 'a decision is sent as application/json');
    const sent = Buffer.from(String(req.headers[DECISION_TOKEN_HEADER] ?? ''));
    if (sent.length !== token.length || !timingSafeEqual(sent, Buffer.from(token)))
      throw new DecisionRefused(
        403,
        "refused: the decision does not carry this viewer's token; reload the page",
      );
    const d = decisionOf(await readBody(req));
    const run = library.run(id);
    if (!run.header) throw new DecisionRefused(422, `tape ${id} has no readable header`);
    if (run.waiting?.id !== d.approvalId)
      throw new DecisionRefused(
        409,
        run.waiting
          ? `the run waits for approval ${run.waiting.id}, not ${d.approvalId}; reload the page`
          : `the tape shows no approval waiting${run.outcome ? ` (the run ended ${run.outcome.status})` : ''}`,
      );
    try {
      return await decide({ workflowId: run.header.workflowId, runId: run.header.runId }, d);
    } catch (err) {
      const status = DECISION_STATUS[String((err as { code?: unknown }).code)];
      if (status) throw new DecisionRefused(status, (err as Error).message);
      throw err;
    }
  }

  const server = http.createServer(async (req, res) => {
    const head = req.method === 'HEAD';
    const host = req.headers.host ?? '';
    const post = req.method === 'POST';
    if (req.method !== 'GET' && !head && !post) {
      res.setHeader('allow', 'GET, HEAD, POST');
      return json(res, 405, { error: `${req.method} is not allowed` }, false);
    }
    if (host !== `${VIEWER_HOST}:${port}` && host !== `localhost:${port}`)
      return json(res, 403, { error: `refused: Host ${JSON.stringify(host)} is not this viewer` }, head);
    if (post) {
      const m = /^\/api\/runs\/([^/]+)\/decision$/.exec((req.url ?? '').split('?')[0] ?? '');
      if (!m) {
        res.setHeader('allow', 'GET, HEAD');
        return json(res, 405, { error: 'POST is only for /api/runs/ID/decision' }, false);
      }
      try {
        return json(res, 200, await decision(req, decodeURIComponent(m[1]!)), false);
      } catch (err) {
        if (err instanceof DecisionRefused) return json(res, err.status, { error: err.message }, false);
        if (err instanceof TapeNotServedError) return json(res, err.status, { error: err.message }, false);
        if (err instanceof URIError) return json(res, 400, { error: 'bad escape in the URL' }, false);
        return json(res, 500, { error: `the decision failed: ${(err as Error).message}` }, false);
      }
    }
    let url: URL;
    try {
      url = new URL(req.url ?? '/', `http://${VIEWER_HOST}:${port}`);
    } catch {
      return json(res, 400, { error: 'bad request URL' }, head);
    }
    const live = /^\/api\/runs\/([^/]+)\/events$/.exec(url.pathname);
    if (live) {
      let id: string;
      try {
        id = decodeURIComponent(live[1]!);
      } catch {
        return json(res, 400, { error: 'bad escape in the URL' }, head);
      }
      return events(req, res, id, url, head);
    }
    if (url.pathname.startsWith('/api/')) {
      try {
        const t0 = performance.now();
        const value = await api(url);
        const t1 = performance.now();
        const body = JSON.stringify(value);
        // Where an answer's time went (reading and verifying a tape, then JSON), for devtools and the bench.
        res.setHeader(
          'server-timing',
          `api;dur=${(t1 - t0).toFixed(1)}, json;dur=${(performance.now() - t1).toFixed(1)}`,
        );
        return send(res, 200, 'application/json; charset=utf-8', body, head);
      } catch (err) {
        if (err instanceof TapeNotServedError) return json(res, err.status, { error: err.message }, head);
        if (err instanceof CatalogQueryError) return json(res, 400, { error: err.message }, head);
        if (err instanceof URIError) return json(res, 400, { error: 'bad escape in the URL' }, head);
        const message = err instanceof Error ? err.message : String(err);
        return json(res, 500, { error: `the viewer failed: ${message}` }, head);
      }
    }
    // Browsers ask for an icon on every page; a quiet "no content" keeps the console free of 404s.
    if (url.pathname === '/favicon.ico') {
      res.writeHead(204, { 'cache-control': 'max-age=86400' });
      return res.end();
    }
    // A what-if experiment's report page (docs/experiments.md), written by `jbx experiment` beside its state file.
    const experiment = /^\/experiments\/([0-9a-f]{12})$/.exec(url.pathname);
    if (experiment) {
      let page: Buffer;
      try {
        page = readFileSync(path.join(dir, '.experiments', `${experiment[1]}.html`));
      } catch {
        return json(res, 404, { error: `no experiment ${experiment[1]} in ${dir}` }, head);
      }
      return send(res, 200, 'text/html; charset=utf-8', page, head, EXPERIMENT_CSP);
    }
    const file = files.get(url.pathname);
    if (!file) return json(res, 404, { error: `not found: ${url.pathname}` }, head);
    return send(res, 200, file.type, file.body, head);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new ViewerListenError(
          err.code === 'EADDRINUSE'
            ? `port ${options.port} on ${VIEWER_HOST} is in use; pick another with --port (0: any free port)`
            : `cannot listen on ${VIEWER_HOST}:${options.port ?? 0}: ${err.message}`,
          err,
        ),
      ),
    );
    server.listen(options.port ?? 0, VIEWER_HOST, () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://${VIEWER_HOST}:${port}/`,
    port,
    dir,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
