/** `jbx verify report.jbxb`: every hash of a bundle, its tape frame by frame, and how its parts fit together. */

import { TapeError, verifyTape } from '../../recorder/tape';
import { BundleError, type OpenedBundle, openBundle } from '../../timetravel/bundle';
import { ExitCode, ExitError } from '../exitError';
import type { Output } from '../output';

/** A bundle that fails any check is damaged (exit 3), with the reader's message naming what failed. */
export function openBundleOrExit(file: string): OpenedBundle {
  try {
    return openBundle(file);
  } catch (err) {
    if (err instanceof BundleError) throw new ExitError(ExitCode.tapeDamaged, err.message, err);
    if (err instanceof TapeError)
      throw new ExitError(ExitCode.tapeDamaged, `bundle ${file}: its tape is damaged: ${err.message}`, err);
    throw err;
  }
}

export function verifyBundle(file: string, out: Output): void {
  let b: OpenedBundle;
  try {
    b = openBundleOrExit(file);
  } catch (err) {
    // --json still gets its one document: what failed, as for a damaged tape.
    if (out.json && err instanceof ExitError) {
      const cause = err.cause as { code?: string; reason?: string } | undefined;
      out.result('', {
        file,
        ok: false,
        kind: 'bundle',
        code: cause?.code ?? null,
        reason: cause?.reason ?? null,
        error: err.message,
      });
    }
    throw err;
  }
  const tapePart = b.parts.find((p) => p.kind === 'tape')!;
  const tape = verifyTape(tapePart.data);
  const m = b.manifest;
  out.result(
    [
      `${file}: ok, bundle of ${b.parts.length} parts, ${b.bytes} bytes, every hash verified`,
      ...b.parts.map(
        (p) =>
          `  ${p.kind.padEnd(12)} ${p.name.padEnd(40)} ${String(p.data.length).padStart(9)} bytes  blake3 ${p.hash.slice(0, 16)}…`,
      ),
      `  tape ${m.tape.tapeId}: ${tape.frames} frames, ${tape.sealed ? `sealed, ${m.tape.outcome}` : 'not sealed'}; code ${m.workflowCode.hash}; history ${m.history ? `${m.history.eventCount} events, of the tape's run` : 'none'}`,
    ].join('\n'),
    {
      file,
      ok: true,
      kind: 'bundle',
      bytes: b.bytes,
      manifest: m,
      parts: b.parts.map((p) => ({ kind: p.kind, name: p.name, bytes: p.data.length, blake3: p.hash })),
      tape,
    },
  );
}
