import { parseArgs } from 'node:util';
import { commands } from './commands';
import { ExitCode, ExitError } from './exitError';
import { createOutput } from './output';

function help(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'usage: jbx COMMAND [options]',
    '',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'exit codes: 0 ok, 1 operation failed, 2 usage error, 3 tape or bundle damaged',
  ].join('\n');
}

async function run(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${help()}\n`);
    return name ? ExitCode.ok : ExitCode.usage;
  }
  const entry = commands.find((c) => c.name === name);
  if (!entry) throw new ExitError(ExitCode.usage, `unknown command ${JSON.stringify(name)}\n\n${help()}`);
  const command = entry.load();
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: rest, options: command.options ?? {}, allowPositionals: true, strict: true });
  } catch (err) {
    throw new ExitError(ExitCode.usage, `${(err as Error).message}\nusage: ${command.usage}`);
  }
  const flags = parsed.values as Record<string, string | boolean | undefined>;
  await command.run({ positionals: parsed.positionals, flags, out: createOutput(flags.json === true) });
  return ExitCode.ok;
}

/** The only place that exits: handlers throw ExitError (or any error, which means "operation failed"). */
export async function main(argv = process.argv.slice(2)): Promise<never> {
  try {
    process.exit(await run(argv));
  } catch (err) {
    const code = err instanceof ExitError ? err.exitCode : ExitCode.failed;
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`jbx: ${message}\n`);
    process.exit(code);
  }
}
