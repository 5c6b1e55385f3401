/** Prints the breaker's precision/recall table on the evaluation set: `npx tsx agents/breakerEval/main.ts`. */
import { DEFAULT_BREAKER_CONFIG } from '../../breaker/config';
import { startModelServer } from '../../modelserver';
import { evaluationSet } from './conversations';
import { formatScores, observeConversations, scoreEvaluation } from './evaluate';

async function main() {
  const set = evaluationSet();
  const server = await startModelServer({ script: { turns: [{ reply: { text: 'idle' } }] } });
  try {
    const observed = await observeConversations(set, server, { minChars: DEFAULT_BREAKER_CONFIG.minChars });
    console.log(
      `${set.filter((c) => c.looping).length} looping, ${set.filter((c) => !c.looping).length} healthy conversations, ${observed.reduce((n, o) => n + o.turns.length, 0)} streamed model turns`,
    );
    console.log(formatScores(scoreEvaluation(observed, { capUsd: 0.5 })));
    if (process.argv.includes('--trips'))
      for (const o of observed) {
        const { firstTrip } = await import('./evaluate');
        const { resolveBreakerConfig } = await import('../../breaker/config');
        console.log(o.conversation.id, JSON.stringify(firstTrip(o, resolveBreakerConfig({ capUsd: 0.5 }))));
      }
  } finally {
    await server.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
