import type { ScriptTurn } from '../../src/testing/modelserver';

/**
 * A model script for the sample agent that takes `steps` tool-calling turns, then answers. Each turn matches the
 * previous tool result, and repeats, so a retried request gets the same reply instead of the next turn's.
 */
export function stepScript(
  steps: number,
  opts: { chunkDelayMs?: number; chunkSize?: number; filler?: string } = {},
) {
  const reply = (i: number) => ({
    text: `Step ${i}: ${opts.filler ?? 'checking the knowledge base once more before answering.'}`,
    toolCalls: [{ name: 'lookup_fact', arguments: { topic: `step-${i}` } }],
    chunkDelayMs: opts.chunkDelayMs ?? 0,
    chunkSize: opts.chunkSize ?? 16,
  });
  const turns: ScriptTurn[] = [];
  for (let i = 1; i < steps; i++)
    turns.push({ id: `turn-${i}`, match: { toolResult: `step-${i - 1}.` }, reply: reply(i), repeat: true });
  turns.push({
    id: 'answer',
    match: { toolResult: `step-${steps - 1}.` },
    reply: { text: `Done after ${steps} lookups.`, chunkDelayMs: opts.chunkDelayMs ?? 0 },
    repeat: true,
  });
  // Last in file order: the first request has no tool result, and this catches it without shadowing the rest.
  turns.push({ id: 'turn-0', reply: reply(0), repeat: true });
  return { name: `steps-${steps}`, turns };
}
