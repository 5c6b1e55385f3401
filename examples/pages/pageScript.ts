import type { ScriptTurn } from '../../src/testing/modelserver';

/**
 * A model script for the page agent: `pages` turns that each ask for the next page (matching the head of the page
 * just read), then a summary. Every turn repeats, so a retried request gets the same reply.
 */
export function pageScript(pages: number, opts: { chunkDelayMs?: number; answerChars?: number } = {}) {
  const ask = (n: number) => ({
    text: `Reading page ${n} next.`,
    toolCalls: [{ name: 'read_page', arguments: { page: n } }],
    chunkDelayMs: opts.chunkDelayMs ?? 0,
    chunkSize: 64,
  });
  const turns: ScriptTurn[] = [];
  for (let n = 1; n < pages; n++)
    turns.push({ id: `page-${n}`, match: { toolResult: `Page ${n - 1} of` }, reply: ask(n), repeat: true });
  const summary = `Read ${pages} pages.`;
  turns.push({
    id: 'summary',
    match: { toolResult: `Page ${pages - 1} of` },
    reply: {
      // A long answer (answerChars) streams in a few large chunks.
      text: opts.answerChars ? summary.padEnd(opts.answerChars, ' The archive is summarized.') : summary,
      chunkSize: 65_536,
    },
    repeat: true,
  });
  // Last in file order: the first request has no tool result, and this catches it without shadowing the rest.
  turns.push({ id: 'page-0', reply: ask(0), repeat: true });
  return { name: `pages-${pages}`, turns };
}
