/**
 * Server-sent events as the model APIs frame them: `event:` and `data:` lines, a blank line ending each event.
 * Events are kept as their exact `event` name and `data` text, so what is replayed is what was received.
 */
import { MalformedSseError } from './errors';

export interface SseEvent {
  event?: string;
  data: string;
}

/**
 * The parsed JSON of events the parser checked, so the recorder reads each event's data once, not once to check
 * it, once for its text and once for the summary. Kept beside the event, not on it: the event is what is
 * recorded and replayed, exactly as received.
 */
const parsedData = new WeakMap<SseEvent, unknown>();

/** The event's data as JSON (`[DONE]` is not JSON: undefined); parsed once per event the parser produced. */
export function eventJson(e: SseEvent): unknown {
  if (e.data === '[DONE]') return undefined;
  // JSON.parse never returns undefined, so undefined means not parsed yet.
  const known = parsedData.get(e);
  if (known !== undefined) return known;
  const v: unknown = JSON.parse(e.data);
  parsedData.set(e, v);
  return v;
}

/** `to` carries `from`'s event unchanged (a copy with more fields): it shares the parsed data. */
export function sameEvent(from: SseEvent, to: SseEvent): void {
  const v = parsedData.get(from);
  if (v !== undefined) parsedData.set(to, v);
}

/** Incremental parser: feed text as it arrives, collect whole events. */
export class SseParser {
  private buffer = '';
  /** Set by the first malformed event; the events before it in the same piece of text are still returned. */
  failure: Error | undefined;
  constructor(private readonly source: string) {}

  push(text: string): SseEvent[] {
    if (this.failure) throw this.failure;
    this.buffer += text;
    const events: SseEvent[] = [];
    // One cut of the buffer per push: slicing it after every event made a big read quadratic.
    const blank = /\r?\n\r?\n/g;
    let start = 0;
    for (let m = blank.exec(this.buffer); m; m = blank.exec(this.buffer)) {
      const block = this.buffer.slice(start, m.index);
      start = m.index + m[0].length;
      try {
        const event = parseBlock(block, this.source);
        if (event) events.push(event);
      } catch (err) {
        this.failure = err as Error;
        break;
      }
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  /** The end of the stream: a last event without its blank line is still an event; other leftovers are not. */
  end(): SseEvent[] {
    if (this.failure) throw this.failure;
    const rest = this.buffer.trim();
    this.buffer = '';
    if (!rest) return [];
    const event = parseBlock(rest, this.source);
    return event ? [event] : [];
  }
}

function parseBlock(block: string, source: string): SseEvent | undefined {
  let event: string | undefined;
  const data: string[] = [];
  // Most streams frame with bare \n: a plain split, the regular expression only for CRLF.
  for (const line of block.includes('\r') ? block.split(/\r?\n/) : block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    // One leading space after the colon is not part of the value.
    const value = colon === -1 ? '' : line.slice(line.charCodeAt(colon + 1) === 32 ? colon + 2 : colon + 1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id' || field === 'retry') continue;
    else throw new MalformedSseError(source, `line ${JSON.stringify(line.slice(0, 80))} is not an SSE field`);
  }
  if (data.length === 0) return undefined;
  const text = data.length === 1 ? data[0]! : data.join('\n');
  const e: SseEvent = event === undefined ? { data: text } : { event, data: text };
  if (text !== '[DONE]') {
    try {
      parsedData.set(e, JSON.parse(text));
    } catch {
      throw new MalformedSseError(source, `event data ${JSON.stringify(text.slice(0, 80))} is not JSON`);
    }
  }
  return e;
}

export function formatSse(e: SseEvent): string {
  const head = e.event === undefined ? '' : `event: ${e.event}\n`;
  return `${head}${e.data
    .split('\n')
    .map((l) => `data: ${l}`)
    .join('\n')}\n\n`;
}
