/**
 * The Vercel AI SDK recorded and replayed by Jukebox. Run against the local model server:
 *
 *   npx tsx modelserver/main.ts --script agents/sample/script.yaml --port 4010 &
 *   JUKEBOX_MODEL_URL=http://127.0.0.1:4010 npx tsx examples/aiSdk.ts            # records, prints the tape
 *   npx tsx examples/aiSdk.ts --replay .jukebox/tapes/ai-sdk-example--<id>.jbx  # offline, same text
 */
import { streamText } from 'ai';
import { recordedOpenAIProvider, SessionTape } from '../integrations';

async function main() {
  const replay = process.argv[process.argv.indexOf('--replay') + 1];
  const replaying = process.argv.includes('--replay') && replay !== undefined;
  const tape = replaying ? undefined : new SessionTape({ session: 'ai-sdk-example' });
  const openai = recordedOpenAIProvider(
    {
      baseURL: `${process.env.JUKEBOX_MODEL_URL ?? 'http://127.0.0.1:4010'}/v1`,
      apiKey: process.env.OPENAI_API_KEY ?? 'local',
    },
    replaying ? { replay } : { sink: () => tape?.begin() },
  );
  const result = streamText({
    model: openai.chat('gpt-4o-mini'),
    prompt: 'How far is the distance to the Moon?',
  });
  for await (const piece of result.textStream) process.stdout.write(piece);
  process.stdout.write('\n');
  await tape?.close();
  if (tape) console.log(`recorded onto ${tape.path}`);
}

void main();
