/**
 * The real targets of an escape attempt, fingerprinted byte for byte: every entry under each directory with its
 * type, mode and sha256. The escape suite compares them before an attempt, after it and after the rollback.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { snapshot } from '../helpers';

export type Fingerprint = Record<string, Record<string, string>>;

export function fingerprint(dirs: readonly string[]): Fingerprint {
  return Object.fromEntries(dirs.map((d) => [d, fs.existsSync(d) ? snapshot(d) : {}]));
}

export function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

export interface World {
  base: string;
  /** The real workspace the booth stages over. */
  workspace: string;
  /** A folder beside it an attack aims at. */
  outside: string;
  staging: string;
  cleanup(): void;
}

/**
 * A workspace with a docs/ tree, a notes file and an executable, and an `outside` folder. Under /var/tmp rather
 * than /tmp: the sandbox gives commands a private /tmp, and a world there would not be the real one.
 */
export function makeWorld(): World {
  fs.mkdirSync('/var/tmp', { recursive: true });
  const base = fs.realpathSync(fs.mkdtempSync('/var/tmp/jbx-escape-'));
  const workspace = path.join(base, 'workspace');
  const outside = path.join(base, 'outside');
  const w = (p: string, data: string, mode = 0o644) => {
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, data);
    fs.chmodSync(p, mode);
  };
  w(path.join(workspace, 'docs/guide.md'), '# guide\n');
  w(path.join(workspace, 'docs/api/index.md'), '# api\n');
  w(path.join(workspace, 'notes.txt'), 'notes\n');
  w(path.join(workspace, 'run.sh'), '#!/bin/sh\necho run\n', 0o755);
  fs.mkdirSync(path.join(workspace, 'inbox'));
  w(path.join(outside, 'secret.txt'), 'TOP SECRET\n', 0o600);
  return {
    base,
    workspace,
    outside,
    staging: path.join(base, 'staging'),
    cleanup: () => fs.rmSync(base, { recursive: true, force: true }),
  };
}
