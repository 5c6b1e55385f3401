import path from 'node:path';
import { BoothOutcome, outcomeLabel, type RolledBack } from '../../recorder/boothOutcome';
import { readTape, TapeError, type TapeFrame } from '../../recorder/tape';
import { isBundleFile } from '../../timetravel/bundle/format';
import type { CommandSpec } from '../command';
import { ExitCode, ExitError, usageError } from '../exitError';
import { createProgress } from '../verify/progress';
import { headerFailure, resolveTapePath } from '../verify/tapeArgument';
import { frameDetail, frameJson, frameLine } from './render';

const USAGE = 'jbx show TAPE [--step N | --frame N | --events] [--dir D] [--json]';

/** The run's status and whether its staging was rolled back (a refused or failed commit, or ctx.rollback). */
function runOutcome(frames: readonly TapeFrame[]): { status: string | null; rolledBack: RolledBack | null } {
  const booth = new BoothOutcome();
  let status: string | null = null;
  let runEnd: number | null = null;
  for (const f of frames) {
    if (f.kind === 'blob') continue;
    booth.see(f.kind, f.step, f.payload);
    if (f.kind === 'outcome') {
      status = String((f.payload as { status?: unknown }).status);
      runEnd = f.step;
    }
  }
  return { status, rolledBack: booth.result(runEnd) };
}

function index(flag: string | boolean | undefined, name: string): number | undefined {
  if (flag === undefined) return undefined;
  const n = Number(flag);
  if (typeof flag !== 'string' || !Number.isInteger(n) || n < 0)
    throw usageError(`--${name} needs a non-negative integer, got ${JSON.stringify(flag)}\nusage: ${USAGE}`);
  return n;
}

export const showCommand: CommandSpec = {
  name: 'show',
  usage: USAGE,
  options: {
    json: { type: 'boolean' },
    dir: { type: 'string' },
    step: { type: 'string' },
    frame: { type: 'string' },
    events: { type: 'boolean' },
  },
  async run({ positionals, flags, out }) {
    if (flags.events) {
      if (flags.step !== undefined || flags.frame !== undefined)
        throw usageError(`--events lists every step; leave out --step / --frame\nusage: ${USAGE}`);
      const file = resolveTapePath(positionals[0], flags.dir as string | undefined, USAGE);
      // Loaded here: it brings the Temporal client, which showing frames does not need.
      const { showEvents } = require('./events') as typeof import('./events');
      return showEvents(file, path.dirname(file), out);
    }
    const step = index(flags.step, 'step');
    const frameIndex = index(flags.frame, 'frame');
    if (step !== undefined && frameIndex !== undefined)
      throw usageError(`--step and --frame exclude each other\nusage: ${USAGE}`);
    const file = resolveTapePath(positionals[0], flags.dir as string | undefined, USAGE);
    const progress = createProgress(`reading ${file}`);
    let tape: ReturnType<typeof readTape>;
    try {
      // A .jbxb bug report shows the tape it carries (its hashes checked as `jbx verify` checks them).
      // The bundle reader (Temporal's protobufs: ~55 modules) only for a .jbxb.
      tape = isBundleFile(file)
        ? (require('../verify/bundle') as typeof import('../verify/bundle')).openBundleOrExit(file).tape
        : readTape(file, { recover: true });
    } catch (err) {
      if (err instanceof TapeError) throw headerFailure(file, err);
      throw err;
    }
    progress.done();
    let frames: TapeFrame[] = tape.frames;
    if (frameIndex !== undefined) {
      const f = tape.frames[frameIndex];
      if (!f)
        throw usageError(
          `${file} has ${tape.frames.length} readable frames; there is no frame ${frameIndex}`,
        );
      frames = [f];
    } else if (step !== undefined) {
      frames = tape.frames.filter((f) => f.step === step && f.kind !== 'blob');
      if (!frames.length) throw usageError(`${file} has no frames at step ${step}`);
    }
    // Blob frames are stamped when a batch is written, after the frames buffered before them: use the earliest.
    const t0 = tape.frames.reduce((m, f) => Math.min(m, f.recordedAtUs), tape.header.createdAtMs * 1000);
    const detailed = frameIndex !== undefined || step !== undefined;
    const h = tape.header;
    const outcome = runOutcome(tape.frames);
    const human = [
      `tape ${h.tapeId}  ${h.workflowType}  workflow ${h.workflowId}  run ${h.runId}`,
      `created ${new Date(h.createdAtMs).toISOString()}  task queue ${h.taskQueue}  agent ${h.agentCodeHash}`,
      `${tape.frames.length} frames, ${tape.blobs.size} blobs, ${tape.byteLength} bytes, ${tape.sealed ? 'sealed' : 'not sealed'}`,
      `outcome ${outcome.status === null ? 'none recorded' : outcomeLabel(outcome.status, outcome.rolledBack)}${
        outcome.rolledBack ? ` at step ${outcome.rolledBack.step}: ${outcome.rolledBack.reason}` : ''
      }`,
      '',
      ...frames.map((f) => (detailed ? frameDetail(f, tape.blobs, t0) : frameLine(f, tape.blobs, t0))),
    ].join('\n');
    out.result(human, {
      file,
      header: h,
      sealed: tape.sealed,
      frameCount: tape.frames.length,
      blobCount: tape.blobs.size,
      byteLength: tape.byteLength,
      outcome,
      tornTail: tape.tornTail,
      corruption: tape.corruption?.message ?? null,
      frames: frames.map((f) => frameJson(f, tape.blobs)),
    });
    if (tape.tornTail)
      out.info(
        `note: ${file} ends in ${tape.tornTail.bytesDropped} bytes of an incomplete frame (torn tail)`,
      );
    if (tape.corruption)
      throw new ExitError(
        ExitCode.tapeDamaged,
        `${file} is damaged; showing the ${tape.frames.length} frames before the fault: ${tape.corruption.message}`,
      );
  },
};
