import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatSse, MalformedSseError, type SseEvent, SseParser } from '../../src/integrations';

const event = fc.record(
  {
    event: fc.constantFrom('message_start', 'content_block_delta', 'error'),
    data: fc.oneof(
      fc.constant('[DONE]'),
      fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 12 })).map((o) => JSON.stringify(o)),
    ),
  },
  { requiredKeys: ['data'] },
);

/** Splits a text at the given fractions: how a network delivers one stream in arbitrary reads. */
function split(text: string, cuts: number[]): string[] {
  const points = [...new Set(cuts.map((c) => Math.floor(c * text.length)))].sort((a, b) => a - b);
  const out: string[] = [];
  let at = 0;
  for (const p of points) {
    out.push(text.slice(at, p));
    at = p;
  }
  out.push(text.slice(at));
  return out;
}

describe('the SSE parser', () => {
  it('gives back the formatted events whatever the read boundaries, CRLF line ends included', () => {
    fc.assert(
      fc.property(
        fc.array(event, { maxLength: 12 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 8 }),
        fc.boolean(),
        (events: SseEvent[], cuts, crlf) => {
          let text = events.map(formatSse).join('');
          if (crlf) text = text.replace(/\n/g, '\r\n');
          const parser = new SseParser('test');
          const parsed = [...split(text, cuts).flatMap((piece) => parser.push(piece)), ...parser.end()];
          expect(parsed).toEqual(events);
        },
      ),
    );
  });

  it('keeps comments and ids out, and a last event without its blank line in', () => {
    const parser = new SseParser('test');
    const events = parser.push(': keep-alive\n\nid: 7\ndata: {"a":1}\n\ndata: {"b":2}');
    expect(events).toEqual([{ data: '{"a":1}' }]);
    expect(parser.end()).toEqual([{ data: '{"b":2}' }]);
  });

  it('returns the events before a malformed one, then fails naming the source and the bad data', () => {
    const parser = new SseParser('http://upstream/v1/chat/completions');
    expect(parser.push('data: {"ok":true}\n\ndata: {broken\n\n')).toEqual([{ data: '{"ok":true}' }]);
    expect(parser.failure).toBeInstanceOf(MalformedSseError);
    expect(() => parser.push('data: {}\n\n')).toThrow(
      /upstream\/v1\/chat\/completions is malformed: event data "\{broken" is not JSON/,
    );
    const other = new SseParser('x');
    expect(other.push('bogus line\n\n')).toEqual([]);
    expect(other.failure?.message).toContain('line "bogus line" is not an SSE field');
  });
});
