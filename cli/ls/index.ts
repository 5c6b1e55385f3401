import path from 'node:path';
import { TapeStore, tapeDirFromEnv } from '../../recorder/store';
import { summarizeTape, type TapeSummary } from '../../recorder/summary';
import type { CommandSpec } from '../command';
import { usageError } from '../exitError';
import { createProgress, mib } from '../verify/progress';
import { formatTable } from './table';

const USAGE = 'jbx ls [--dir D] [--json]';

function row(s: TapeSummary): string[] {
  return [
    path.basename(s.file, '.jbx'),
    s.workflowType ?? '?',
    s.started?.replace('T', ' ').replace(/\.\d+Z$/, 'Z') ?? '?',
    String(s.steps),
    String(s.frames),
    s.outcome,
    String(s.tokens.input + s.tokens.output),
    s.cost === null ? '-' : `$${s.cost.toFixed(4)}`,
    String(s.bytes),
  ];
}

export const lsCommand: CommandSpec = {
  name: 'ls',
  summary: 'list the recorded runs (tapes) in a folder',
  usage: USAGE,
  options: { json: { type: 'boolean' }, dir: { type: 'string' } },
  async run({ positionals, flags, out }) {
    if (positionals.length) throw usageError(`jbx ls takes no arguments (use --dir)\nusage: ${USAGE}`);
    const dir = typeof flags.dir === 'string' ? path.resolve(flags.dir) : tapeDirFromEnv();
    const files = await new TapeStore({ dir }).list();
    const progress = createProgress(`reading ${files.length} tapes in ${dir}`);
    let bytes = 0;
    const tapes = files.map((f, i) => {
      const s = summarizeTape(f, (_frames, offset) =>
        progress.tick(() => `tape ${i + 1}/${files.length}, ${mib(bytes + offset)}`),
      );
      bytes += s.bytes;
      progress.tick(() => `tape ${i + 1}/${files.length}, ${mib(bytes)}`);
      return s;
    });
    progress.done();
    const human = tapes.length
      ? formatTable(
          ['id', 'workflow', 'started', 'steps', 'frames', 'outcome', 'tokens', 'cost', 'bytes'],
          tapes.map(row),
        )
      : `no tapes in ${dir}`;
    out.result(
      human,
      tapes.map((s) => ({
        id: path.basename(s.file, '.jbx'),
        file: s.file,
        tapeId: s.tapeId,
        workflow: s.workflowType,
        workflowId: s.workflowId,
        runId: s.runId,
        started: s.started,
        steps: s.steps,
        frames: s.frames,
        outcome: s.outcome,
        tokens: s.tokens.input + s.tokens.output,
        inputTokens: s.tokens.input,
        outputTokens: s.tokens.output,
        cost: s.cost,
        bytes: s.bytes,
        problem: s.problem,
      })),
    );
  },
};
