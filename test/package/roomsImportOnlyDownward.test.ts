import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(__dirname, '../../src');

/** The rooms of src/, low to high: a room imports only from itself and the rooms before it. */
const ROOMS = [
  'errors',
  'llm',
  'recorder',
  'booth',
  'breaker',
  'agent',
  'telemetry',
  'timetravel',
  'integrations',
  'stream',
  'temporal',
  'cli',
  'testing',
];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : /\.(ts|js)$/.test(e.name) ? [p] : [];
  });
}

/** Every relative import, export-from, require and dynamic import of a file, resolved to src-relative paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [
    ...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+'(\.[^']+)'/g),
    ...text.matchAll(/\bimport\s+'(\.[^']+)'/g),
    ...text.matchAll(/\b(?:require|import)\('(\.[^']+)'\)/g),
  ].map((m) => m[1]!);
  return specs.map((s) => path.relative(SRC, path.resolve(path.dirname(file), s)));
}

const roomOf = (rel: string) => rel.split(path.sep)[0]!;

describe('the layout of src/', () => {
  const files = sources(SRC).map((f) => ({ file: f, rel: path.relative(SRC, f) }));

  it('has exactly these rooms (and the public entry src/index.ts)', () => {
    const tops = [...new Set(files.map((f) => (f.rel.includes(path.sep) ? roomOf(f.rel) : f.rel)))].sort();
    expect(tops).toEqual([...ROOMS, 'index.ts'].sort());
  });

  it('never imports from a higher room into a lower one', () => {
    const upward: string[] = [];
    let across = 0;
    for (const { file, rel } of files) {
      if (!rel.includes(path.sep)) continue; // src/index.ts gathers every room
      const from = ROOMS.indexOf(roomOf(rel));
      for (const target of importsOf(file)) {
        if (target.startsWith('..')) continue;
        const to = ROOMS.indexOf(roomOf(target));
        if (to === from) continue;
        across++;
        if (to > from) upward.push(`${rel} -> ${target}`);
      }
    }
    // The scan sees the imports between rooms (hundreds of them), so an empty list below means something.
    expect(across).toBeGreaterThan(200);
    expect(upward).toEqual([]);
  });
});
