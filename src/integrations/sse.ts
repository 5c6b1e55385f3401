/**
 * Server-sent events as the model APIs frame them: `event:` and `data:` lines, a blank line ending each event.
 * Events are kept as their exact `event` name and `data` text, so what is replayed is what was received.
 */
import { MalformedSseError } from './errors';

export interface SseEvent {
  event?: string;
  data: string;
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
  for (const line of block.split(/\r?\n/)) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id' || field === 'retry') continue;
    else throw new MalformedSseError(source, `line ${JSON.stringify(line.slice(0, 80))} is not an SSE field`);
  }
  if (data.length === 0) return undefined;
  const text = data.join('\n');
  if (text !== '[DONE]') {
    try {
      JSON.parse(text);
    } catch {
      throw new MalformedSseError(source, `event data ${JSON.stringify(text.slice(0, 80))} is not JSON`);
    }
  }
  return event === undefined ? { data: text } : { event, data: text };
}

export function formatSse(e: SseEvent): string {
  const head = e.event === undefined ? '' : `event: ${e.event}\n`;
  return `${head}${e.data
    .split('\n')
    .map((l) => `data: ${l}`)
    .join('\n')}\n\n`;
}
