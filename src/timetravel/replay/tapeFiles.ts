/**
 * The tapes a replay suite runs: a tape or bundle file, a folder (every `.jbx` / `.jbxb` in it and below), or a
 * glob (`recordings/**\/*.jbx`; `*`, `?`, `**`, `[abc]`, `{a,b}`), in a stable order.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const TAPE = /\.jbxb?$/;
/** Folders a tape store keeps beside the tapes, never tapes themselves. */
const NOT_TAPES = new Set(['code', 'node_modules', '.git']);

export function isGlob(pattern: string): boolean {
  return /[*?[{]/.test(pattern);
}

function walk(dir: string, out: string[]): void {
  let entries: import('node:fs').Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (!NOT_TAPES.has(e.name)) walk(p, out);
    } else if (TAPE.test(e.name)) out.push(p);
  }
}

/** A glob as a regular expression over `/`-separated paths. */
export function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        // `**/` matches any number of folders, including none.
        const slash = glob[i + 2] === '/';
        re += slash ? '(?:[^/]*/)*' : '.*';
        i += slash ? 2 : 1;
      } else re += '[^/]*';
    } else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end < 0) re += '\\[';
      else {
        const body = glob
          .slice(i + 1, end)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\');
        re += `[${body}]`;
        i = end;
      }
    } else if (c === '{') {
      const end = glob.indexOf('}', i + 1);
      if (end < 0) re += '\\{';
      else {
        re += `(?:${glob
          .slice(i + 1, end)
          .split(',')
          .map((alt) => alt.replace(/[.+^$()|\\]/g, '\\$&').replace(/\*/g, '[^/]*'))
          .join('|')})`;
        i = end;
      }
    } else re += c.replace(/[.+^$()|\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/** The static folder a glob starts from: its parts before the first one with a wildcard. */
function globBase(glob: string): string {
  const parts = glob.split('/');
  const fixed: string[] = [];
  for (const p of parts) {
    if (isGlob(p)) break;
    fixed.push(p);
  }
  if (fixed.length === parts.length) fixed.pop();
  return fixed.join('/') || (glob.startsWith('/') ? '/' : '.');
}

/**
 * The tape files one argument names, sorted. A file is itself (whatever its name); a folder, its tapes and
 * bundles; a glob, the tape and bundle files matching it. Nothing found is an empty list.
 */
export function listTapes(pattern: string, cwd = process.cwd()): string[] {
  const abs = path.resolve(cwd, pattern);
  if (!isGlob(pattern)) {
    if (!existsSync(abs)) return [];
    if (!statSync(abs).isDirectory()) return [abs];
    const out: string[] = [];
    walk(abs, out);
    return out.sort();
  }
  const glob = path.resolve(cwd, pattern).split(path.sep).join('/');
  const base = globBase(glob);
  const re = globToRegExp(glob);
  const out: string[] = [];
  walk(base, out);
  return out.filter((f) => re.test(f.split(path.sep).join('/'))).sort();
}
