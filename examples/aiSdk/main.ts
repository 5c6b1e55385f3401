/**
 * The Vercel AI SDK recorded and replayed by Jukebox, self-contained: `npx tsx examples/aiSdk/main.ts`.
 *
 * It starts the local model server, streams an answer through a recorded provider onto a session tape, stops
 * the server, and streams the same prompt again from the tape alone. Point `baseURL` at a real API (and drop
 * the model server) to record real calls: nothing else changes.
 */
import { streamText } from 'ai';
import { recordedOpenAIProvider, SessionTape } from '../../src/integrations';
import { startModelServer } from '../../src/testing/modelserver';

const PROMPT = 'How far away is the Moon?';

async function answer(provider: ReturnType<typeof recordedOpenAIProvider>): Promise<string> {
  const result = streamText({ model: provider.chat('gpt-4o-mini'), prompt: PROMPT });
  let text = '';
  for await (const piece of result.textStream) text += piece;
  return text;
}

async function main() {
  const model = await startModelServer({
    script: { turns: [{ reply: { text: 'About 384,400 km, roughly thirty Earths away.', chunkSize: 5 } }] },
  });
  const tape = new SessionTape({ session: 'ai-sdk-example' });
  const live = recordedOpenAIProvider(
    { baseURL: model.openaiBaseURL, apiKey: 'local' },
    { sink: () => tape.begin() },
  );
  console.log(`live:     ${await answer(live)}`);
  await tape.close();
  await model.close();

  const offline = recordedOpenAIProvider(
    { baseURL: model.openaiBaseURL, apiKey: 'local' },
    { replay: tape.path },
  );
  console.log(`replayed: ${await answer(offline)}  (model server stopped; from ${tape.path})`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
