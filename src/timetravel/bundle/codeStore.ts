/**
 * The workflow code that recorded tapes, kept by its hash (the tapes' agentCodeHash) in `<tape folder>/code/`,
 * so a bug report can carry the exact code of a run long after the source moved on. A worker writes its bundle
 * there once per distinct code; `jbx bundle` reads it back and checks the hash.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { hashBundleCode } from '../../recorder/agentCodeHash';

export const CODE_FOLDER = 'code';

/** `blake3:<hex>` → `<hex>.js`; anything else is not a hash this store can hold. */
function fileName(agentCodeHash: string): string | undefined {
  const m = /^blake3:([0-9a-f]{64})$/.exec(agentCodeHash);
  return m ? `${m[1]}.js` : undefined;
}

export function codeDirFor(tapeDir: string): string {
  return path.join(tapeDir, CODE_FOLDER);
}

/** Stores a workflow bundle under its hash, once; returns the hash. */
export async function storeWorkflowCode(
  tapeDir: string,
  bundle: { code: string } | { codePath: string },
): Promise<{ hash: string; file: string }> {
  const code = 'code' in bundle ? bundle.code : await readFile(bundle.codePath, 'utf8');
  const hash = hashBundleCode(code);
  const dir = codeDirFor(tapeDir);
  const file = path.join(dir, fileName(hash)!);
  if (!existsSync(file)) {
    await mkdir(dir, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, code);
    await rename(tmp, file);
  }
  return { hash, file };
}

/** The stored code whose hash is `agentCodeHash`, from the first folder that has it intact. */
export function findWorkflowCode(
  codeDirs: readonly string[],
  agentCodeHash: string,
): { code: string; file: string } | undefined {
  const name = fileName(agentCodeHash);
  if (!name) return undefined;
  for (const dir of codeDirs) {
    const file = path.join(dir, name);
    if (!existsSync(file)) continue;
    const code = readFileSync(file, 'utf8');
    // A file edited after it was stored is not the recorded code.
    if (hashBundleCode(code) === agentCodeHash) return { code, file };
  }
  return undefined;
}
