/** A server-sent-events client over fetch, as a browser's EventSource reads the stream (id, event, data lines). */
export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

export interface SseResponse {
  status: number;
  headers: Headers;
  /** The events, until the server ends the stream or `signal` aborts it. */
  events: AsyncIterable<SseEvent>;
}

export async function openSse(
  url: string,
  options: { lastEventId?: string; signal?: AbortSignal } = {},
): Promise<SseResponse> {
  const res = await fetch(url, {
    headers: {
      accept: 'text/event-stream',
      ...(options.lastEventId !== undefined ? { 'last-event-id': options.lastEventId } : {}),
    },
    signal: options.signal,
  });
  return { status: res.status, headers: res.headers, events: parse(res, options.signal) };
}

async function* parse(res: Response, signal?: AbortSignal): AsyncGenerator<SseEvent> {
  if (!res.body) return;
  const decoder = new TextDecoder();
  let buffer = '';
  let current: { id?: string; event?: string; data: string[] } = { data: [] };
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let nl = buffer.indexOf('\n');
      while (nl >= 0) {
        const line = buffer.slice(0, nl).replace(/\r$/, '');
        buffer = buffer.slice(nl + 1);
        nl = buffer.indexOf('\n');
        if (line === '') {
          if (current.data.length || current.event)
            yield {
              ...(current.id !== undefined ? { id: current.id } : {}),
              event: current.event ?? 'message',
              data: current.data.join('\n'),
            };
          current = { data: [] };
          continue;
        }
        if (line.startsWith(':')) continue; // a comment: the keep-alive
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') current.data.push(value);
        else if (field === 'id') current.id = value;
        else if (field === 'event') current.event = value;
      }
    }
  } catch (err) {
    if (signal?.aborted) return;
    throw err;
  }
}
