/**
 * Runs the model server on its own, for a worker in another process:
 *   tsx src/testing/modelserver/main.ts --script FILE [--port N] [--host H]
 */
import { parseArgs } from 'node:util';
import { startModelServer } from './server';

const USAGE = 'usage: tsx src/testing/modelserver/main.ts --script FILE [--port N] [--host 127.0.0.1]';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { script: { type: 'string' }, port: { type: 'string' }, host: { type: 'string' } },
  });
  if (!values.script) throw new Error(`--script is required. ${USAGE}`);
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--port must be an integer from 0 to 65535 (got ${values.port}). ${USAGE}`);

  const server = await startModelServer({ script: values.script, port, host: values.host });
  console.log(`Jukebox model server listening on ${server.url}`);
  console.log(`  OpenAI base URL:    ${server.openaiBaseURL}`);
  console.log(`  Anthropic base URL: ${server.anthropicBaseURL}`);
  console.log(`  set JUKEBOX_MODEL_URL=${server.url} for the worker; stats at ${server.url}/_jukebox/stats`);

  const stop = () => {
    void server.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : String(err));
  process.exit(1);
});
