/**
 * Prints the breaker's precision/recall table (the README's) on the tuning set and the held-out set, the
 * semantic detector on n-grams and on the local sentence-embedding model:
 * `npx tsx eval/breaker/main.ts [--trips]` (--trips: each conversation's first trip with all detectors).
 */
import { DEFAULT_BREAKER_CONFIG, resolveBreakerConfig } from '../../src/breaker/config';
import { LocalModelEmbedder } from '../../src/breaker/localEmbedder';
import { startModelServer } from '../../src/testing/modelserver';
import { evaluationSet, TARGET_DETECTOR } from './conversations';
import { firstTrip, formatReport, observeConversations } from './evaluate';
import { HELD_OUT_TARGET_DETECTOR, heldOutSet, heldOutSetHash } from './heldOut';

async function main() {
  const server = await startModelServer({ script: { turns: [{ reply: { text: 'idle' } }] } });
  const embedder = new LocalModelEmbedder();
  await embedder.load();
  const options = { minChars: DEFAULT_BREAKER_CONFIG.minChars, embedder };
  try {
    const sets = [
      {
        set: 'tuning',
        observed: await observeConversations(evaluationSet(), server, options),
        targets: TARGET_DETECTOR,
      },
      {
        set: 'held-out',
        observed: await observeConversations(heldOutSet(), server, options),
        targets: HELD_OUT_TARGET_DETECTOR,
      },
    ];
    for (const s of sets) {
      const looping = s.observed.filter((o) => o.conversation.looping).length;
      const turns = s.observed.reduce((n, o) => n + o.turns.length, 0);
      console.log(
        `${s.set}: ${looping} looping, ${s.observed.length - looping} healthy, ${turns} streamed model turns`,
      );
    }
    console.log(`held-out set SHA-256: ${heldOutSetHash()}`);
    console.log(formatReport(sets, { capUsd: 0.5 }));
    if (process.argv.includes('--trips')) {
      const config = resolveBreakerConfig({ capUsd: 0.5 });
      for (const s of sets)
        for (const o of s.observed)
          console.log(s.set, o.conversation.id, JSON.stringify(firstTrip(o, config) ?? null));
    }
  } finally {
    await server.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
