/**
 * The MCP escrow on disk as an append-only log of JSON lines, so escrowing a call writes that call and nothing
 * else (a rewrite of the whole escrow on every call made a run of large calls quadratic). Line 1 is the header
 * `{"format":"jukebox-mcp-escrow/2","id":…}`; each later line is one record:
 *
 * - `{"op":"call","uid":…,"call":{server,tool,arguments,compensate?,step?}}`: a call joins the escrow, last;
 * - `{"op":"state","uid":…,"state":…,"result"?,"compensation"?}`: a call's state moves (commit, compensation);
 * - `{"op":"drop","step":…}`: a retried step takes back its calls still `escrowed`.
 *
 * Reading folds the records in order: a call's `seq` is its position once drops are applied and its idempotency
 * key `<id>:<seq>`, as before. A last line without its newline, or one that does not parse, is a torn tail (a
 * writer died mid-append): the log ends before it, and the next append cuts it off. A bad line before the end, an
 * unknown record, a call naming a server the booth does not have, or a state for an unknown call is
 * `McpEscrowCorruptError`.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import { atomicWrite, isCode } from '../durable';
import { McpEscrowCorruptError } from './errors';
import type { EscrowedCall, EscrowState } from './escrow';

export const ESCROW_FORMAT = 'jukebox-mcp-escrow/2';

const STATES = new Set<EscrowState>([
  'escrowed',
  'applying',
  'applied',
  'failed',
  'compensated',
  'uncompensated',
]);

/** What a `call` record stores: what to send, never its position or state. */
export type CallBody = Pick<EscrowedCall, 'server' | 'tool' | 'arguments' | 'compensate' | 'step'>;

export type EscrowRecord =
  | { op: 'call'; uid: string; call: CallBody }
  | { op: 'state'; uid: string; state: EscrowState; result?: unknown; compensation?: unknown }
  | { op: 'drop'; step: string };

export interface EscrowFold {
  id: string;
  calls: EscrowedCall[];
  /** The record id of each call, by position. */
  uids: string[];
  /** Bytes of whole records: an append starts here (a torn tail past it is cut off first). */
  validBytes: number;
  size: number;
}

export const newUid = () => randomBytes(8).toString('hex');

/** Reads and folds the log; null when there is none. `servers`: the names a call may use. */
export async function readEscrowLog(
  file: string,
  servers: ReadonlySet<string> | null,
): Promise<EscrowFold | null> {
  let bytes: Buffer;
  try {
    bytes = await fs.readFile(file);
  } catch (err) {
    if (isCode(err, 'ENOENT')) return null;
    throw new McpEscrowCorruptError(file, 'it cannot be read', err);
  }
  const lines: { text: string; end: number }[] = [];
  let start = 0;
  for (;;) {
    const nl = bytes.indexOf(0x0a, start);
    if (nl < 0) break;
    lines.push({ text: bytes.subarray(start, nl).toString('utf8'), end: nl + 1 });
    start = nl + 1;
  }
  // Bytes after the last newline: a record cut short.
  const parsed: unknown[] = [];
  let validBytes = 0;
  for (const [i, line] of lines.entries()) {
    try {
      parsed.push(JSON.parse(line.text));
      validBytes = line.end;
    } catch (err) {
      if (i === lines.length - 1 && start === bytes.length) break;
      throw new McpEscrowCorruptError(file, `line ${i + 1} is not JSON`, err);
    }
  }
  const header = parsed[0] as { format?: unknown; id?: unknown } | undefined;
  if (header === undefined) {
    if (bytes.length === 0) return null;
    throw new McpEscrowCorruptError(file, 'its header line is missing');
  }
  if (header.format !== ESCROW_FORMAT || typeof header.id !== 'string')
    throw new McpEscrowCorruptError(file, `its format is not ${ESCROW_FORMAT}`);
  const fold: EscrowFold = { id: header.id, calls: [], uids: [], validBytes, size: bytes.length };
  for (const [i, r] of (parsed.slice(1) as EscrowRecord[]).entries())
    applyRecord(
      fold,
      r,
      servers,
      () => new McpEscrowCorruptError(file, `record ${i + 1} is malformed or names an unconfigured server`),
    );
  return fold;
}

function applyRecord(
  fold: EscrowFold,
  r: EscrowRecord,
  servers: ReadonlySet<string> | null,
  bad: () => Error,
): void {
  if (r === null || typeof r !== 'object') throw bad();
  if (r.op === 'call') {
    const c = r.call;
    if (
      typeof r.uid !== 'string' ||
      c === null ||
      typeof c !== 'object' ||
      typeof c.tool !== 'string' ||
      typeof c.server !== 'string' ||
      (servers !== null && !servers.has(c.server)) ||
      typeof c.arguments !== 'object' ||
      c.arguments === null ||
      fold.uids.includes(r.uid)
    )
      throw bad();
    const seq = fold.calls.length;
    fold.calls.push({ ...c, seq, key: `${fold.id}:${seq}`, state: 'escrowed' });
    fold.uids.push(r.uid);
  } else if (r.op === 'state') {
    const at = fold.uids.indexOf(r.uid);
    if (at < 0 || !STATES.has(r.state)) throw bad();
    const call = fold.calls[at]!;
    call.state = r.state;
    if ('result' in r) call.result = r.result;
    if ('compensation' in r) call.compensation = r.compensation;
  } else if (r.op === 'drop') {
    const keep = fold.calls
      .map((c, i) => [c, fold.uids[i]!] as const)
      .filter(([c]) => !(c.step === r.step && c.state === 'escrowed'));
    fold.calls = keep.map(([c], seq) => ({ ...c, seq, key: `${fold.id}:${seq}` }));
    fold.uids = keep.map(([, u]) => u);
  } else throw bad();
}

/**
 * Appends records (creating the log with its header first when there is none), in one write; `sync` fdatasyncs
 * it. Returns the fold with the records applied.
 */
export async function appendEscrowLog(
  file: string,
  fold: EscrowFold | null,
  records: EscrowRecord[],
  sync: boolean,
  id?: string,
): Promise<EscrowFold> {
  const body = records.map((r) => `${JSON.stringify(r)}\n`).join('');
  let next: EscrowFold;
  if (fold === null) {
    next = { id: id ?? randomBytes(8).toString('hex'), calls: [], uids: [], validBytes: 0, size: 0 };
    const header = `${JSON.stringify({ format: ESCROW_FORMAT, id: next.id })}\n`;
    // Created whole (temp + rename): a log is never seen without its header.
    await atomicWrite(file, header + body, 0o600, undefined, sync);
    next.validBytes = next.size = Buffer.byteLength(header + body);
  } else {
    next = { ...fold, calls: fold.calls.map((c) => ({ ...c })), uids: [...fold.uids] };
    if (fold.size > fold.validBytes) await fs.truncate(file, fold.validBytes);
    // O_APPEND: a record another writer appended meanwhile is never overwritten.
    const fh = await fs.open(file, 'a');
    try {
      const buf = Buffer.from(body);
      await fh.write(buf);
      if (sync) await fh.datasync();
      next.validBytes = next.size = fold.validBytes + buf.length;
    } finally {
      await fh.close();
    }
  }
  for (const r of records) applyRecord(next, r, null, () => new Error('unreachable'));
  return next;
}
