/**
 * The recording proxy: an OpenAI- and Anthropic-compatible HTTP endpoint for clients in any language. In
 * record mode it forwards to the upstream through the Jukebox fetch, so each session's calls land on its own
 * `.jbx` tape; in replay mode it answers from one tape and never opens a connection.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { BreakerFeatureSource } from '../../breaker/featureSource';
import type { StoreFsyncPolicy } from '../../recorder';
import {
  errorBody,
  type Fetch,
  jukeboxFetch,
  modelCallOf,
  ReplayBook,
  SessionTape,
  type WireRequestError,
} from '..';
import { ProxyListenError, ProxyUpstreamError } from './errors';
import { type ProxyBreakerOptions, SessionBreaker } from './sessionBreaker';
import { SESSION_HEADER, sessionOf } from './sessions';

export interface ProxyOptions {
  port?: number;
  host?: string;
  /** Origin of the model API, e.g. http://127.0.0.1:4010 (a trailing /v1 is dropped: clients send their own). */
  upstream?: string;
  /** Folder of the session tapes (default $JUKEBOX_TAPE_DIR, else .jukebox/tapes). */
  tapeDir?: string;
  /** Serve from this tape instead of recording; no upstream is contacted. */
  replay?: string;
  /** Tape durability (default 'step': fsync once per answered call); 'none' leaves it to the OS. */
  fsync?: StoreFsyncPolicy;
  /** How long the upstream may take to send its response headers (default 120 s). */
  upstreamTimeoutMs?: number;
  /**
   * The circuit breaker of each recorded session (docs/circuit-breaker.md): on by default with a per-session
   * cap of DEFAULT_AGENT_CAP_USD; `{ capUsd, ...thresholds }` to tune it (checked at start-up), false for none.
   * A tripped session's next request gets HTTP 429, error code jukebox_breaker_tripped, with the evidence.
   */
  breaker?: ProxyBreakerOptions | false;
}

export interface SessionInfo {
  session: string;
  tape: string;
  calls: number;
  /** The session's breaker: spend so far, and the trip if it opened. */
  breaker?: { spentUsd: number; capUsd: number; tripped: boolean; detector?: string; degraded: string[] };
}

export interface RecordingProxy {
  url: string;
  port: number;
  mode: 'record' | 'replay';
  sessions(): SessionInfo[];
  /** Seals one session's tape; its next request starts a new tape. */
  closeSession(session: string): Promise<SessionInfo | undefined>;
  /** Stops listening and seals every session tape. */
  close(): Promise<void>;
}

const DEFAULT_UPSTREAMS = { openai: 'https://api.openai.com', anthropic: 'https://api.anthropic.com' };
const HOP_BY_HOP = new Set([
  'host',
  'connection',
  'content-length',
  'accept-encoding',
  'keep-alive',
  'transfer-encoding',
  SESSION_HEADER,
]);

function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sendJson(res: http.ServerResponse, status: number, body: unknown) {
  if (res.headersSent) return res.end();
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function sendResponse(res: http.ServerResponse, answer: Response) {
  const headers: http.OutgoingHttpHeaders = {};
  answer.headers.forEach((v, k) => {
    if (!HOP_BY_HOP.has(k) && k !== 'content-encoding') headers[k] = v;
  });
  if (!answer.headers.get('content-type')?.includes('text/event-stream')) {
    // A whole body goes out in one write with its length: headers, chunks and the chunked terminator as
    // separate small writes cost a delayed ACK (about 10 ms) per request.
    const bytes = Buffer.from(await answer.arrayBuffer());
    res.writeHead(answer.status, { ...headers, 'content-length': bytes.length });
    return res.end(bytes);
  }
  res.writeHead(answer.status, headers);
  if (!answer.body) return res.end();
  const reader = answer.body.getReader();
  res.on('close', () => void reader.cancel().catch(() => {}));
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (res.destroyed) return;
    res.write(value);
  }
  res.end();
}

function listen(server: http.Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(new ProxyListenError(host, port, err)));
    server.listen(port, host, () => resolve());
  });
}

export async function startProxy(options: ProxyOptions = {}): Promise<RecordingProxy> {
  const host = options.host ?? '127.0.0.1';
  const replay = options.replay ? ReplayBook.fromTape(options.replay) : undefined;
  const upstreamBase = options.upstream?.replace(/\/+$/, '').replace(/\/v1$/, '');
  const timeoutMs = options.upstreamTimeoutMs ?? 120_000;
  const tapes = new Map<string, SessionTape>();
  const breakers = new Map<string, SessionBreaker>();
  // A cap that is not a positive number fails here, at start-up, never as "unlimited".
  const breakerConfig =
    replay || options.breaker === false ? undefined : SessionBreaker.resolve(options.breaker);
  const features = new BreakerFeatureSource();
  const tapeOf = (session: string) => {
    let t = tapes.get(session);
    if (!t) {
      t = new SessionTape({ dir: options.tapeDir, session, fsync: options.fsync });
      tapes.set(session, t);
      breakers.delete(session);
      if (breakerConfig) breakers.set(session, new SessionBreaker(session, breakerConfig, features));
    }
    return t;
  };
  const info = (session: string, t: SessionTape): SessionInfo => {
    const b = breakers.get(session);
    return {
      session,
      tape: t.path,
      calls: t.calls,
      ...(b
        ? {
            breaker: {
              spentUsd: b.spentUsd,
              capUsd: b.config.capUsd,
              tripped: b.tripped !== undefined,
              ...(b.tripped ? { detector: b.tripped.detector } : {}),
              degraded: b.degraded,
            },
          }
        : {}),
    };
  };

  const forward = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://proxy.local');
    const { session, path } = sessionOf(url.pathname, req.headers[SESSION_HEADER]);
    if (req.method === 'GET' && path === '/_jukebox/sessions')
      return sendJson(res, 200, {
        mode: replay ? 'replay' : 'record',
        sessions: [...tapes].map(([s, t]) => info(s, t)),
      });
    const close = /^\/_jukebox\/sessions\/([^/]+)\/close$/.exec(path);
    if (req.method === 'POST' && close) {
      const name = decodeURIComponent(close[1] as string);
      const t = tapes.get(name);
      tapes.delete(name);
      await t?.close();
      return sendJson(res, t ? 200 : 404, t ? info(name, t) : { error: `no open session ${name}` });
    }
    const body = ['GET', 'HEAD'].includes(req.method ?? 'GET') ? undefined : await readBody(req);
    const text = body?.toString('utf8');
    let call: ReturnType<typeof modelCallOf>;
    try {
      call = modelCallOf(path, text);
    } catch (err) {
      return sendJson(res, 400, errorBody('invalid_request_error', err as WireRequestError, { session }));
    }
    const base = upstreamBase ?? DEFAULT_UPSTREAMS[call?.provider ?? 'openai'];
    const target = `${base}${path}${url.search}`;
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers))
      if (v !== undefined && !HOP_BY_HOP.has(k)) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
    const network: Fetch = async (input, init) => {
      // The limit is on the response headers only: a long stream after them is a slow answer, not a dead upstream.
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(new Error(`no response within ${timeoutMs} ms`)), timeoutMs);
      res.once('close', () => {
        if (!res.writableEnded) abort.abort(new Error('the client went away'));
      });
      try {
        return await fetch(input, { ...init, signal: abort.signal });
      } catch (err) {
        throw new ProxyUpstreamError(base, err);
      } finally {
        clearTimeout(timer);
      }
    };
    const t = replay ? undefined : tapeOf(session);
    const breaker = breakers.get(session);
    const refused = call && breaker?.refusal(call.fields);
    if (refused) {
      // Not retryable: the official SDKs honour x-should-retry, so a tripped crew stops instead of backing off.
      res.setHeader('x-should-retry', 'false');
      return sendJson(res, refused.status, errorBody(refused.type, refused.error, refused.extra));
    }
    const sinkOf = () => {
      const sink = t?.begin();
      return sink && breaker && call && t
        ? breaker.watch(sink, call.fields, (trip) => t.recordTrip(trip))
        : sink;
    };
    const recorder = jukeboxFetch({ replay, sink: sinkOf, fetch: network });
    try {
      const answer = await recorder(target, { method: req.method, headers, body: text });
      await sendResponse(res, answer);
    } catch (err) {
      if (err instanceof ProxyUpstreamError)
        return sendJson(
          res,
          502,
          errorBody('jukebox_upstream_unreachable', err, { upstream: base, session }),
        );
      throw err;
    }
  };

  const server = http.createServer((req, res) => {
    res.on('error', () => {});
    forward(req, res).catch((err: unknown) => {
      const e = err instanceof Error ? err : new Error(String(err));
      sendJson(res, 500, errorBody('jukebox_proxy_error', e));
    });
  });
  const port = options.port ?? 0;
  await listen(server, port, host);
  const actual = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${actual}`,
    port: actual,
    mode: replay ? 'replay' : 'record',
    sessions: () => [...tapes].map(([s, t]) => info(s, t)),
    async closeSession(session) {
      const t = tapes.get(session);
      if (!t) return undefined;
      tapes.delete(session);
      await t.close();
      return info(session, t);
    },
    close() {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        for (const t of tapes.values()) await t.close();
      })();
      return closing;
    },
  };
}
