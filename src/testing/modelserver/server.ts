import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { JukeboxError } from '../../errors';
import {
  anthropicErrorBody,
  anthropicEvents,
  anthropicFrame,
  anthropicMessage,
  parseAnthropicRequest,
} from './anthropicWire';
import { ModelServerListenError, ModelServerPortInUseError } from './errors';
import {
  OPENAI_DONE_FRAME,
  openaiChunks,
  openaiCompletion,
  openaiErrorBody,
  openaiFrame,
  parseOpenAIRequest,
} from './openaiWire';
import { planReply } from './reply';
import { type ModelScript, parseScriptText, readModelScript, type ScriptProvider } from './script';
import { ScriptSession, type ServedTurn } from './session';

export interface ModelServer {
  /** http://HOST:PORT */
  url: string;
  port: number;
  /** For `new OpenAI({ baseURL })`: url + '/v1'. */
  openaiBaseURL: string;
  /** For `new Anthropic({ baseURL })`: the SDK adds /v1 itself. */
  anthropicBaseURL: string;
  /** API requests received since the script was loaded, unmatched and malformed ones included. */
  requestCount(): number;
  servedTurns(): ServedTurn[];
  /** Replaces the script and resets the counts; throws a typed error if the script is invalid. */
  loadScript(script: ModelScript | string): void;
  close(): Promise<void>;
}

export interface StartModelServerOptions {
  script: ModelScript | string;
  /** 0 (the default) lets the OS pick a free port. */
  port?: number;
  host?: string;
}

const MAX_BODY_BYTES = 32 * 1024 * 1024;

class HttpProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) reject(new HttpProblem(413, `request body is over ${MAX_BODY_BYTES} bytes`));
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function sendJson(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  headers: http.OutgoingHttpHeaders = {},
) {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function requestIdHeader(provider: ScriptProvider, id: string): http.OutgoingHttpHeaders {
  return provider === 'openai' ? { 'x-request-id': id } : { 'request-id': id };
}

function sendApiError(
  res: http.ServerResponse,
  provider: ScriptProvider,
  status: number,
  message: string,
  requestId: string,
  code: string | null = null,
) {
  const body =
    provider === 'openai'
      ? openaiErrorBody(status, message, code)
      : anthropicErrorBody(status, message, requestId);
  sendJson(res, status, body, requestIdHeader(provider, requestId));
}

/**
 * Waits `ms` (a scripted model thinking) unless the client goes away first, which a test provokes on purpose
 * (a killed worker): resolves false then, without holding the connection or the server's close open.
 */
async function pause(session: ScriptSession, res: http.ServerResponse, ms: number): Promise<boolean> {
  if (ms <= 0) return !res.destroyed;
  const gone = new AbortController();
  const onClose = () => gone.abort();
  res.once('close', onClose);
  session.pausing++;
  try {
    await sleep(ms, undefined, { signal: gone.signal });
    return true;
  } catch {
    return false;
  } finally {
    session.pausing--;
    res.off('close', onClose);
  }
}

/** Writes SSE frames with the scripted pauses before and between them; stops quietly if the client goes away. */
async function streamFrames(
  session: ScriptSession,
  res: http.ServerResponse,
  frames: string[],
  plan: { chunkDelayMs: number; firstChunkDelayMs: number },
  headers: http.OutgoingHttpHeaders,
) {
  let gone = false;
  res.on('close', () => {
    gone = true;
  });
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    ...headers,
  });
  // Headers go out at once, as from a real API that accepted the request; then silence while it thinks.
  res.flushHeaders();
  for (let i = 0; i < frames.length; i++) {
    const delay = i === 0 ? plan.firstChunkDelayMs : plan.chunkDelayMs;
    if (delay > 0 && !(await pause(session, res, delay))) return;
    // A killed worker mid-stream is a case tests provoke on purpose: not an error here.
    if (gone) return;
    res.write(frames[i]);
  }
  res.end();
}

async function serveModelCall(
  session: ScriptSession,
  provider: ScriptProvider,
  req: http.IncomingMessage,
  res: http.ServerResponse,
) {
  const seq = session.countRequest();
  const requestId = `req_jbx${seq}`;
  let body: unknown;
  try {
    body = JSON.parse(await readBody(req));
  } catch (err) {
    if (err instanceof HttpProblem) return sendApiError(res, provider, err.status, err.message, requestId);
    const reason = err instanceof Error ? err.message : String(err);
    return sendApiError(res, provider, 400, `The request body is not valid JSON: ${reason}`, requestId);
  }
  const parsed = provider === 'openai' ? parseOpenAIRequest(body) : parseAnthropicRequest(body);
  if (typeof parsed === 'string') return sendApiError(res, provider, 400, parsed, requestId);

  const selected = session.take(parsed);
  if (!selected)
    return sendApiError(res, provider, 400, session.explainNoMatch(parsed), requestId, 'no_turn_matched');
  const { turn, turnId } = selected;
  if (turn.reply.status !== undefined) {
    if (!(await pause(session, res, turn.reply.firstChunkDelayMs ?? 0))) return;
    const message =
      turn.reply.text ??
      `Scripted HTTP ${turn.reply.status} from turn "${turnId}" of model script "${session.scriptName}".`;
    return sendApiError(res, provider, turn.reply.status, message, requestId);
  }

  const plan = planReply(turn.reply, parsed, (i) =>
    provider === 'openai' ? `call_jbx${seq}_${i}` : `toolu_jbx${seq}_${i}`,
  );
  const headers = requestIdHeader(provider, requestId);
  const created = Math.floor(Date.now() / 1000);
  if (provider === 'openai') {
    const id = `chatcmpl-jbx${seq}`;
    if (!parsed.stream) {
      if (!(await pause(session, res, plan.firstChunkDelayMs))) return;
      return sendJson(res, 200, openaiCompletion(plan, id, parsed.model, created), headers);
    }
    const includeUsage = 'includeUsage' in parsed && parsed.includeUsage === true;
    const frames = openaiChunks(plan, id, parsed.model, created, includeUsage).map(openaiFrame);
    frames.push(OPENAI_DONE_FRAME);
    return streamFrames(session, res, frames, plan, headers);
  }
  const id = `msg_jbx${seq}`;
  if (!parsed.stream) {
    if (!(await pause(session, res, plan.firstChunkDelayMs))) return;
    return sendJson(res, 200, anthropicMessage(plan, id, parsed.model), headers);
  }
  return streamFrames(
    session,
    res,
    anthropicEvents(plan, id, parsed.model).map(anthropicFrame),
    plan,
    headers,
  );
}

async function serveControl(
  session: ScriptSession,
  route: string,
  req: http.IncomingMessage,
  res: http.ServerResponse,
) {
  if (route === 'GET /_jukebox/stats') return sendJson(res, 200, session.stats());
  if (route === 'POST /_jukebox/reset') {
    session.reset();
    return sendJson(res, 200, { ok: true, script: session.scriptName });
  }
  // route === 'POST /_jukebox/script'
  const source = 'the script posted to /_jukebox/script';
  try {
    const loaded = readModelScript(parseScriptText(await readBody(req), source), source);
    session.load(loaded);
    return sendJson(res, 200, { ok: true, script: loaded.name, turns: loaded.script.turns.length });
  } catch (err) {
    const code = err instanceof JukeboxError ? err.code : 'BAD_REQUEST';
    return sendJson(res, 400, { error: { message: err instanceof Error ? err.message : String(err), code } });
  }
}

const ROUTES = [
  'POST /v1/chat/completions',
  'POST /v1/messages',
  'GET /_jukebox/stats',
  'POST /_jukebox/script',
  'POST /_jukebox/reset',
];

function handle(
  session: ScriptSession,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> | void {
  const pathname = new URL(req.url ?? '/', 'http://local').pathname.replace(/\/+$/, '');
  const route = `${req.method} ${pathname}`;
  if (route === 'POST /v1/chat/completions') return serveModelCall(session, 'openai', req, res);
  if (route === 'POST /v1/messages') return serveModelCall(session, 'anthropic', req, res);
  if (ROUTES.includes(route)) return serveControl(session, route, req, res);
  // Both SDKs read error.message from this shape.
  sendJson(res, 404, {
    type: 'error',
    error: {
      type: 'not_found_error',
      message: `The Jukebox model server has no route ${route}. It serves: ${ROUTES.join(', ')}. Point the OpenAI SDK at <url>/v1 and the Anthropic SDK at <url>.`,
    },
  });
}

function listen(server: http.Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new ModelServerPortInUseError(host, port, err)
          : new ModelServerListenError(host, port, err),
      );
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

export async function startModelServer(opts: StartModelServerOptions): Promise<ModelServer> {
  // Load first: a bad script should fail before a port is taken.
  const session = new ScriptSession(readModelScript(opts.script));
  const host = opts.host ?? '127.0.0.1';
  const server = http.createServer((req, res) => {
    res.on('error', () => {});
    Promise.resolve(handle(session, req, res)).catch((err: unknown) => {
      const message = `The Jukebox model server failed on ${req.method} ${req.url}: ${err instanceof Error ? err.stack : String(err)}`;
      sendJson(res, 500, { type: 'error', error: { type: 'api_error', message } });
    });
  });
  await listen(server, opts.port ?? 0, host);
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    openaiBaseURL: `${url}/v1`,
    anthropicBaseURL: url,
    requestCount: () => session.requestCount(),
    servedTurns: () => session.servedTurns(),
    loadScript: (script) => session.load(readModelScript(script)),
    close: () => {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        // Keep-alive sockets of SDK clients would otherwise hold close() open for seconds.
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
