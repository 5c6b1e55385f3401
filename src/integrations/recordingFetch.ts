/**
 * A `fetch` that records model calls or answers them from a tape; everything else passes through. It is the
 * one seam behind the SDK wrappers, the Vercel AI SDK provider and the recording proxy: every client that
 * takes a custom fetch gets recording and replay without another code change.
 */
import { JukeboxError } from '../errors';
import type { Provider } from '../llm/types';
import { MalformedSseError, WireRequestError } from './errors';
import { activitySink, type ExchangeSink } from './exchangeSink';
import type { ReplayBook } from './replayBook';
import { formatSse, type SseEvent, SseParser, sameEvent } from './sse';
import {
  eventText,
  providerOfPath,
  requestFields,
  summarizeResponse,
  type WireRequestFields,
  type WireResponse,
} from './wire';

export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface JukeboxFetchOptions {
  /** Answer model calls from this tape's recorded calls; nothing goes to the network. */
  replay?: ReplayBook;
  /** Where to record a call; default: the current Jukebox activity's step, if any (else nothing is recorded). */
  sink?: () => ExchangeSink | undefined;
  /** The fetch that reaches the network (default: the global fetch). */
  fetch?: Fetch;
}

const encoder = new TextEncoder();

/** The error body both SDKs turn into an APIError with this message. */
export function errorBody(type: string, err: JukeboxError | Error, extra: Record<string, unknown> = {}) {
  const code = err instanceof JukeboxError ? err.code : 'INTEGRATION_FAILED';
  return { type: 'error', error: { type, code, message: err.message, ...extra } };
}

export function errorResponse(status: number, type: string, err: Error, extra?: Record<string, unknown>) {
  return new Response(JSON.stringify(errorBody(type, err, extra)), {
    status,
    headers: { 'content-type': 'application/json' },
  });
}

/** The answer a recorded call holds, as the upstream sent it (streamed events at once, in order). */
export function replayResponse(r: WireResponse): Response {
  if (r.kind === 'json')
    return new Response(r.body, { status: r.status, headers: { 'content-type': r.contentType } });
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const e of r.events) controller.enqueue(encoder.encode(formatSse(e)));
      controller.close();
    },
  });
  return new Response(body, {
    status: r.status,
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' },
  });
}

function urlOf(input: string | URL | Request): URL {
  return new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
}

/** The parsed model call of a request, or undefined when it is not one (another route, a non-JSON body). */
export function modelCallOf(
  pathname: string,
  body: unknown,
): { provider: Provider; fields: WireRequestFields } | undefined {
  const provider = providerOfPath(pathname);
  if (!provider || typeof body !== 'string') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new WireRequestError(pathname, 'the body is not valid JSON');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new WireRequestError(pathname, 'the body is not a JSON object');
  return { provider, fields: requestFields(provider, parsed as Record<string, unknown>) };
}

/**
 * Re-frames an upstream event stream event by event, recording each. A malformed event ends the stream with an
 * SSE `error` event, which both SDKs raise as an APIError, instead of handing the client broken bytes.
 */
function recordStream(
  res: Response,
  provider: Provider,
  fields: WireRequestFields,
  sink: ExchangeSink,
  startedAt: number,
  source: string,
): ReadableStream<Uint8Array> {
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser(source);
  const events: (SseEvent & { offsetMs: number })[] = [];
  let finished = false;
  let answered = false;
  const take = (controller: ReadableStreamDefaultController<Uint8Array>, batch: SseEvent[]) => {
    const offsetMs = Math.round(performance.now() - startedAt);
    let out = '';
    for (const e of batch) {
      sink.chunk(events.length, offsetMs, e, eventText(provider, e));
      const kept = { ...e, offsetMs };
      sameEvent(e, kept);
      events.push(kept);
      out += formatSse(e);
    }
    // The events of one upstream read go on as one write, as they arrived.
    if (out) controller.enqueue(encoder.encode(out));
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (finished) return;
      try {
        const { done, value } = await reader.read();
        if (!done) {
          take(controller, parser.push(decoder.decode(value, { stream: true })));
          if (parser.failure) throw parser.failure;
          return;
        }
        take(controller, parser.end());
        finished = true;
        await sink.response(
          summarizeResponse(provider, { kind: 'sse', status: res.status, events }, fields.model),
          res.status,
        );
        answered = true;
        controller.close();
      } catch (err) {
        // A client that hung up after the last event cancels the stream under us: the call was answered.
        if (answered) return;
        finished = true;
        await reader.cancel().catch(() => {});
        const e = err instanceof Error ? err : new Error(String(err));
        const code = err instanceof JukeboxError ? err.code : 'INTEGRATION_STREAM_FAILED';
        await sink.failed({ code, message: e.message }).catch(() => {});
        if (!(err instanceof MalformedSseError)) return controller.error(err);
        const body = errorBody('jukebox_malformed_sse', e);
        controller.enqueue(encoder.encode(formatSse({ event: 'error', data: JSON.stringify(body) })));
        controller.close();
      }
    },
    cancel(reason) {
      finished = true;
      return reader.cancel(reason);
    },
  });
}

/** fetch has decoded the body already: the upstream's length and encoding no longer describe it. */
function decodedHeaders(res: Response): Headers {
  const headers = new Headers(res.headers);
  headers.delete('content-encoding');
  headers.delete('content-length');
  return headers;
}

export function jukeboxFetch(options: JukeboxFetchOptions = {}): Fetch {
  const upstream: Fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const sinkOf = options.sink ?? (() => activitySink());
  return async (input, init) => {
    const url = urlOf(input);
    let call: ReturnType<typeof modelCallOf>;
    try {
      call = modelCallOf(url.pathname, init?.body);
    } catch (err) {
      return errorResponse(400, 'invalid_request_error', err as Error);
    }
    if (options.replay) {
      if (!call)
        return errorResponse(
          404,
          'not_found_error',
          new Error(`replay serves only model calls (chat completions, messages), not ${url.pathname}`),
        );
      try {
        return replayResponse(options.replay.take(call.fields).response);
      } catch (err) {
        return errorResponse(400, 'jukebox_replay_unmatched', err as Error, {
          tape: options.replay.tapePath,
        });
      }
    }
    const sink = call ? sinkOf() : undefined;
    if (!call || !sink) return upstream(input, init);
    await sink.request(call.fields, url.pathname);
    const startedAt = performance.now();
    const res = await upstream(input, init);
    const contentType = res.headers.get('content-type') ?? '';
    if (contentType.includes('text/event-stream') && res.body && res.ok) {
      const body = recordStream(res, call.provider, call.fields, sink, startedAt, url.origin + url.pathname);
      return new Response(body, {
        status: res.status,
        statusText: res.statusText,
        headers: decodedHeaders(res),
      });
    }
    const text = await res.text();
    sink.chunk(
      0,
      Math.round(performance.now() - startedAt),
      { body: text, contentType, status: res.status },
      undefined,
    );
    await sink.response(
      summarizeResponse(
        call.provider,
        { kind: 'json', status: res.status, contentType, body: text },
        call.fields.model,
      ),
      res.status,
    );
    return new Response(text, {
      status: res.status,
      statusText: res.statusText,
      headers: decodedHeaders(res),
    });
  };
}
