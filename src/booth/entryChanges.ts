/** Pure operations on a manifest's entries and the change set built from them. */

import { printable } from '../errors';
import type { Change } from './changeSet';
import type { Base, Entry } from './manifest';
import { keyRel } from './paths';

/**
 * Drops everything staged at and below `key`; a whiteout is needed only when the real tree had something there
 * when first staged, otherwise the path simply leaves the change set.
 */
export function removeAt(entries: Record<string, Entry>, key: string, base: Base): void {
  const prefix = `${key}/`;
  for (const k of Object.keys(entries)) if (k === key || k.startsWith(prefix)) delete entries[k];
  if (base.type === 'file' || base.type === 'dir') entries[key] = { kind: 'whiteout', op: 'delete', base };
}

export function byRel(a: string, b: string): number {
  const x = keyRel(a);
  const y = keyRel(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  return x.length - y.length;
}

/**
 * One line a person or a verifier model reads: names are escaped (src/errors/printable.ts), so a name holding a
 * newline or a bidi control cannot forge another line or reorder this one.
 */
export function summarize(c: Change): string {
  const from = c.from !== undefined ? ` (from ${printable(c.from)})` : '';
  const name = printable(c.path);
  if (c.after.type === 'none') return `delete ${name}: ${c.before.type}, ${c.bytesBefore} bytes before`;
  const refused =
    c.modeRefused === undefined
      ? ''
      : ` (mode ${c.modeRefused.requested.toString(8)} refused: ${c.modeRefused.bits.join(', ')} stripped)`;
  if (c.after.type === 'dir')
    return `${c.op} ${name}/${from}: directory, mode ${c.after.mode.toString(8)}${refused}`;
  let lines = '';
  if (c.diff !== undefined) {
    const body = c.diff.split('\n').slice(2);
    const plus = body.filter((l) => l.startsWith('+')).length;
    const minus = body.filter((l) => l.startsWith('-')).length;
    lines = `, +${plus} -${minus} lines`;
  }
  return `${c.op} ${name}${from}: ${c.bytesBefore} -> ${c.bytesAfter} bytes, mode ${c.after.mode.toString(8)}${refused}${lines}`;
}
