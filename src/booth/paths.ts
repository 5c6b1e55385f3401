/**
 * Lexical half of confinement: turns what an agent typed into components relative to the workspace root, or
 * refuses. Lexical `..` handling is only sound because the physical half (StagedWorkspace's walk) refuses every
 * symlink, so no component can redirect the walk elsewhere.
 */
import path from 'node:path';
import { PathEscapeError, PathRefusedError } from './errors';

export const MAX_PATH_BYTES = 4096;
export const MAX_NAME_BYTES = 255;

/** A path inside the root as its components; `[]` is the root itself. */
export type Rel = readonly string[];

export function relKey(rel: Rel): string {
  return rel.join('/');
}

export function keyRel(key: string): Rel {
  return key === '' ? [] : key.split('/');
}

/** True when `inner` is `outer` or below it (both absolute, normalized). */
export function isWithin(outer: string, inner: string): boolean {
  const r = path.relative(outer, inner);
  return r === '' || (!r.startsWith('..') && !path.isAbsolute(r));
}

/**
 * @param roots absolute spellings of the root (as given and its realpath) an absolute input may start with.
 */
export function normalizeInput(input: unknown, roots: readonly string[]): Rel {
  if (typeof input !== 'string')
    throw new PathRefusedError(String(input), 'not-a-string', 'paths are strings');
  if (input === '')
    throw new PathRefusedError(input, 'empty', 'an empty path names nothing; use "." for the workspace root');
  if (input.includes('\0'))
    throw new PathRefusedError(input, 'nul-byte', 'NUL bytes truncate paths in the OS; remove it');
  if (Buffer.byteLength(input) > MAX_PATH_BYTES)
    throw new PathRefusedError(input, 'path-too-long', `paths are limited to ${MAX_PATH_BYTES} bytes`);
  // A backslash is a legal Linux name byte, but an agent writing one almost always meant a Windows separator;
  // accepting it literally would silently create odd names instead of telling the agent.
  if (input.includes('\\'))
    throw new PathRefusedError(input, 'backslash', 'use "/" as the separator; backslashes are not accepted');
  if (/^[A-Za-z]:/.test(input))
    throw new PathRefusedError(
      input,
      'windows-drive',
      'drive letters do not exist here; use a relative path',
    );

  let raw = input;
  if (path.posix.isAbsolute(input)) {
    const abs = path.posix.normalize(input);
    const root = roots.find((r) => isWithin(r, abs));
    if (root === undefined)
      throw new PathEscapeError(input, 'absolute-outside-root', `the workspace root is ${roots[0]}`);
    raw = path.posix.relative(root, abs);
  }
  const out: string[] = [];
  for (const c of raw.split('/')) {
    if (c === '' || c === '.') continue;
    if (c === '..') {
      if (out.length === 0)
        throw new PathEscapeError(input, 'dotdot', '".." climbs above the workspace root');
      out.pop();
      continue;
    }
    if (Buffer.byteLength(c) > MAX_NAME_BYTES)
      throw new PathRefusedError(input, 'name-too-long', `a name is limited to ${MAX_NAME_BYTES} bytes`);
    out.push(c);
  }
  return out;
}

export function startsWith(rel: Rel, prefix: Rel): boolean {
  if (prefix.length > rel.length) return false;
  for (let i = 0; i < prefix.length; i++) if (rel[i] !== prefix[i]) return false;
  return true;
}
