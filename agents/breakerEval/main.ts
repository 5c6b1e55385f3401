/**
 * Prints the breaker's precision/recall table on the evaluation set (the README's table):
 * `npx tsx agents/breakerEval/main.ts [--trips]` (--trips: each conversation's first trip with all detectors).
 */
import { DEFAULT_BREAKER_CONFIG, resolveBreakerConfig } from '../../breaker/config';
import { startModelServer } from '../../modelserver';
import { evaluationSet } from './conversations';
import { firstTrip, formatScores, observeConversations, scoreEvaluation } from './evaluate';

async function main() {
  const set = evaluationSet();
  const server = await startModelServer({ script: { turns: [{ reply: { text: 'idle' } }] } });
  try {
    const observed = await observeConversations(set, server, { minChars: DEFAULT_BREAKER_CONFIG.minChars });
    const looping = set.filter((c) => c.looping).length;
    const turns = observed.reduce((n, o) => n + o.turns.length, 0);
    console.log(
      `${looping} looping, ${set.length - looping} healthy conversations, ${turns} streamed model turns`,
    );
    console.log(formatScores(scoreEvaluation(observed, { capUsd: 0.5 })));
    if (process.argv.includes('--trips')) {
      const config = resolveBreakerConfig({ capUsd: 0.5 });
      for (const o of observed) console.log(o.conversation.id, JSON.stringify(firstTrip(o, config) ?? null));
    }
  } finally {
    await server.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
