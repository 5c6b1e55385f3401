import path from 'node:path';
import { openTape, TapeError, verifyTape } from '../../recorder/tape';
import { isBundleFile } from '../../timetravel/bundle/format';
import type { CommandSpec } from '../command';
import { ExitCode, ExitError } from '../exitError';
import { createProgress, mib } from './progress';
import { headerFailure, resolveStoredTape } from './tapeArgument';

const USAGE = 'jbx verify TAPE|BUNDLE.jbxb [--dir D] [--json]';

export const verifyCommand: CommandSpec = {
  name: 'verify',
  usage: USAGE,
  options: { json: { type: 'boolean' }, dir: { type: 'string' } },
  async run({ positionals, flags, out }) {
    const file = await resolveStoredTape(positionals[0], flags.dir as string | undefined, USAGE);
    // The bundle reader (Temporal's protobufs: ~55 modules) only for a .jbxb.
    if (isBundleFile(file)) return (require('./bundle') as typeof import('./bundle')).verifyBundle(file, out);
    const name = path.basename(file);
    // A first streaming pass reports progress on big tapes; verifyTape then builds the full report.
    const progress = createProgress(`verifying ${name}`);
    try {
      const cursor = openTape(file, { keepBlobs: false });
      try {
        for (let f = cursor.next(); f; f = cursor.next())
          if (f.index % 512 === 0) progress.tick(() => `${f.index} frames, ${mib(f.offset)}`);
      } catch (err) {
        if (!(err instanceof TapeError)) throw err;
      } finally {
        cursor.close();
      }
    } catch (err) {
      if (!(err instanceof TapeError)) throw err;
      const report = verifyTape(file);
      if (out.json) out.result('', { file, ...report });
      throw headerFailure(file, err);
    }
    progress.done();
    const report = verifyTape(file);
    const sealed = report.sealed ? 'sealed' : 'not sealed (still recording, or its writer stopped)';
    out.result(
      report.ok
        ? `${file}: ok, ${report.frames} frames, ${report.byteLength} bytes, ${sealed}`
        : `${file}: DAMAGED`,
      { file, ...report },
    );
    if (!report.ok) {
      const where =
        report.firstBadFrame === null
          ? `at byte ${report.offset}`
          : `first bad frame ${report.firstBadFrame} at byte ${report.offset}`;
      throw new ExitError(
        ExitCode.tapeDamaged,
        `${file} is damaged: ${where}; ${report.recoverableFrames} frames before it verified and can be recovered\n${report.reason}`,
      );
    }
  },
};
