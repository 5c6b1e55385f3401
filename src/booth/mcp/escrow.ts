/**
 * MCP tool calls in the Shadow Booth. Every call is written to an escrow log on disk and runs only at commit, in
 * the order it was staged, each with an optional compensating call for the saga, unless the operator lets it run
 * live: a tool listed in the server's `liveTools`, or one the server annotates `readOnlyHint: true` when the
 * booth config marks that server `trusted` (an untrusted server's annotations are only its own claim).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { currentActivityTape } from '../../recorder/activityTape';
import type { FaultHook } from '../commit';
import { atomicWriteJson } from '../durable';
import { findGrant, type McpApprovalNeeded, type McpGrant, mcpApprovalReason } from './approval';
import { DEFAULT_MAX_ARGUMENT_BYTES, type McpConnections } from './connections';
import {
  McpApprovalRequiredError,
  McpArgumentsError,
  McpArgumentsTooLargeError,
  McpEscrowCorruptError,
  McpServerUnavailableError,
  McpToolFailedError,
} from './errors';
import {
  appendEscrowLog,
  type CallBody,
  type EscrowFold,
  type EscrowRecord,
  newUid,
  readEscrowLog,
} from './escrowLog';

export { ESCROW_FORMAT } from './escrowLog';
export const ESCROW_FILE = 'escrow.jsonl';
/** A tool step's escrowed calls until the step completes (in the step's folder), in the same format. */
export const PENDING_FILE = 'mcp-pending.jsonl';
/** `_meta` key carrying a stable id per escrowed call, so a server can drop a call a retry sends twice. */
export const IDEMPOTENCY_META_KEY = 'jukebox/idempotencyKey';
/** What discard() keeps of calls a commit already sent, beside the run's folder (it outlives the staging). */
export const SENT_FORMAT = 'jukebox-mcp-sent/1';

export interface McpCompensation {
  tool: string;
  arguments: Record<string, unknown>;
}

export type EscrowState = 'escrowed' | 'applying' | 'applied' | 'failed' | 'compensated' | 'uncompensated';

export interface EscrowedCall {
  /** Position in commit order, from 0. */
  seq: number;
  /** Stable across retries: sent as `_meta["jukebox/idempotencyKey"]`. */
  key: string;
  server: string;
  tool: string;
  arguments: Record<string, unknown>;
  compensate?: McpCompensation;
  /** The tool step that escrowed it (its activity id): a step's calls join the escrow once, when it completes. */
  step?: string;
  state: EscrowState;
  result?: unknown;
  compensation?: unknown;
}

export type McpCallOutcome =
  | { mode: 'live'; result: McpToolResult }
  | { mode: 'escrowed'; seq: number; server: string; tool: string };

export interface McpToolResult {
  content: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
}

export interface McpCommitResult {
  applied: number;
  /** Calls a previous attempt had already applied. */
  skipped: number;
  calls: Array<{ seq: number; server: string; tool: string; result: unknown }>;
}

export interface McpCompensateResult {
  compensated: Array<{ seq: number; server: string; tool: string; by: string }>;
  /** Applied calls that had no compensating call: they stay done; the failure report names them. */
  uncompensated: Array<{ seq: number; server: string; tool: string }>;
}

/** A call a commit already sent (or was sending when it died), as discard() keeps it. */
export type SentCall = Pick<
  EscrowedCall,
  'seq' | 'key' | 'server' | 'tool' | 'arguments' | 'state' | 'result' | 'compensation'
>;

function plainArguments(
  server: string,
  tool: string,
  args: unknown,
  maxBytes: number,
): Record<string, unknown> {
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    throw new McpArgumentsError(server, tool, `arguments must be an object, got ${JSON.stringify(args)}`);
  let copy: unknown;
  try {
    copy = JSON.parse(JSON.stringify(args));
  } catch (err) {
    throw new McpArgumentsError(server, tool, `arguments are not JSON (${String(err)})`);
  }
  // A value JSON drops or changes (undefined, functions, Dates, NaN) would be sent differently than staged.
  if (!isDeepJson(args, copy))
    throw new McpArgumentsError(server, tool, 'arguments hold values JSON cannot carry unchanged');
  const size = Buffer.byteLength(JSON.stringify(copy));
  if (size > maxBytes) throw new McpArgumentsTooLargeError(server, tool, size, maxBytes);
  return copy as Record<string, unknown>;
}

function isDeepJson(a: unknown, b: unknown): boolean {
  if (a === null || typeof a === 'string' || typeof a === 'boolean') return a === b;
  if (typeof a === 'number') return Number.isFinite(a) && a === b;
  if (Array.isArray(a))
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => isDeepJson(v, b[i]));
  if (typeof a !== 'object' || Object.getPrototypeOf(a) !== Object.prototype) return false;
  const o = b as Record<string, unknown>;
  const keys = Object.keys(a as object);
  return keys.length === Object.keys(o).length && keys.every((k) => isDeepJson((a as never)[k], o[k]));
}

function textOf(result: McpToolResult): string {
  return result.content
    .map((c) => (c as { type?: string; text?: string }).text ?? '')
    .join(' ')
    .slice(0, 500);
}

/** Only the fields a `call` record stores (a pending call carries its seq, key and state too). */
function callOf(c: CallBody): CallBody {
  return {
    server: c.server,
    tool: c.tool,
    arguments: c.arguments,
    ...(c.compensate ? { compensate: c.compensate } : {}),
    ...(c.step !== undefined ? { step: c.step } : {}),
  };
}

export class McpEscrow {
  readonly stagingDir: string;
  private readonly file: string;
  private readonly sentFile: string;
  private queue: Promise<unknown> = Promise.resolve();
  /** The last fold read or written, and the file it was read from (see `load`). */
  private cached: { ino: number; size: number; mtimeMs: number; fold: EscrowFold } | null = null;

  /** Step mode: calls go to this step's pending file, and join the escrow in `mergePending`. */
  private readonly stepPending: { file: string; step: string } | null;
  /**
   * Whether this attempt escrowed a call. A pending file it did not write is a dead attempt's (one a power loss
   * left without its marker): never this step's staging, so it is neither read nor merged.
   */
  private pendingWritten = false;
  /** Calls a person approved for this step (McpGrant), and the first call found waiting for one. */
  private grants: readonly McpGrant[] = [];
  approvalNeeded: McpApprovalNeeded | null = null;

  constructor(
    private readonly connections: McpConnections,
    stagingDir: string,
    private readonly faultPoint: FaultHook = () => {},
    step?: { dir: string; id: string },
    /** Where discard() keeps the calls already sent; default `<stagingDir>.sent.json`. */
    sentFile?: string,
  ) {
    this.stagingDir = stagingDir;
    this.file = path.join(stagingDir, ESCROW_FILE);
    this.sentFile = sentFile ?? `${stagingDir}.sent.json`;
    this.stepPending = step ? { file: path.join(step.dir, PENDING_FILE), step: step.id } : null;
  }

  /**
   * Appends a completed step's pending calls to the escrow, in one append, unless calls of that step are
   * already there (a retry finishing a completed step): each call joins exactly once. Returns how many joined.
   */
  mergePending(step: string, pending: { id: string; calls: EscrowedCall[] } | null): Promise<number> {
    return this.exclusive(async () => {
      if (pending === null || pending.calls.length === 0) return 0;
      const escrow = await this.load();
      if (escrow?.calls.some((c) => c.step === step)) return 0;
      await this.append(
        escrow,
        pending.calls.map((c) => ({ op: 'call', uid: newUid(), call: callOf({ ...c, step }) })),
        pending.id,
      );
      return pending.calls.length;
    });
  }

  /**
   * Takes back calls step `step` merged into the escrow without the step reaching its checkpoint (killed in
   * between): a retry that stages afresh must not find them. Only calls still `escrowed` (never sent).
   */
  dropStep(step: string): Promise<number> {
    return this.exclusive(async () => {
      const escrow = await this.load();
      if (escrow === null) return 0;
      const dropped = escrow.calls.filter((c) => c.step === step && c.state === 'escrowed').length;
      if (dropped === 0) return 0;
      await this.append(escrow, [{ op: 'drop', step }]);
      return dropped;
    });
  }

  /** The calls this step escrowed so far, with the escrow id their keys were made from (step mode). */
  async pending(): Promise<{ id: string; calls: EscrowedCall[] } | null> {
    const p = await this.loadPending();
    return p === null || p.calls.length === 0 ? null : { id: p.id, calls: p.calls };
  }

  private async loadPending(): Promise<EscrowFold | null> {
    if (this.stepPending === null || !this.pendingWritten) return null;
    return readEscrowLog(this.stepPending.file, new Set(this.connections.names()));
  }

  /** The approvals this step runs with: an approved call is escrowed with the arguments the person let through. */
  allow(grants: readonly McpGrant[]): void {
    this.grants = grants;
  }

  /**
   * Runs a tool live when the operator allows it (`liveTools`, or a trusted server's `readOnlyHint`), or
   * escrows the call until commit. The server must list the tool (and the compensating tool): an unknown name
   * is refused at once rather than discovered at commit; arguments over the server's `maxArgumentBytes` too.
   */

  call(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    options: { compensate?: McpCompensation } = {},
  ): Promise<McpCallOutcome> {
    return this.exclusive(async () => {
      const max = this.connections.config(server).maxArgumentBytes ?? DEFAULT_MAX_ARGUMENT_BYTES;
      let clean = plainArguments(server, tool, args, max);
      const info = await this.connections.tool(server, tool);
      const asks = mcpApprovalReason(server, info, this.connections.config(server));
      if (asks !== null) {
        const grant = findGrant(this.grants, server, tool, clean);
        if (!grant) {
          // Noted before throwing, so a tool that catches the error still ends its step waiting for a person.
          this.approvalNeeded ??= { server, tool, args: clean, reason: asks };
          throw new McpApprovalRequiredError(server, tool);
        }
        clean = plainArguments(server, tool, grant.args, max);
      }
      if (info.live) {
        const result = await this.invoke(server, tool, clean, undefined, 'live');
        return { mode: 'live', result };
      }
      let compensate: McpCompensation | undefined;
      if (options.compensate) {
        await this.connections.tool(server, options.compensate.tool);
        compensate = {
          tool: options.compensate.tool,
          arguments: plainArguments(server, options.compensate.tool, options.compensate.arguments, max),
        };
      }
      const main = await this.load();
      const record: EscrowRecord = {
        op: 'call',
        uid: newUid(),
        call: callOf({
          server,
          tool,
          arguments: clean,
          ...(compensate ? { compensate } : {}),
          ...(this.stepPending !== null ? { step: this.stepPending.step } : {}),
        }),
      };
      let seq: number;
      if (this.stepPending !== null) {
        // In step mode the seq is where the call lands when the step's calls join the escrow.
        const pending = await this.loadPending();
        await fs.mkdir(path.dirname(this.stepPending.file), { recursive: true });
        // Not synced: a retry after a crash throws a dead attempt's pending calls away anyway.
        const next = await appendEscrowLog(this.stepPending.file, pending, [record], false, main?.id);
        this.pendingWritten = true;
        seq = (main?.calls.length ?? 0) + next.calls.length - 1;
      } else seq = (await this.append(main, [record])).calls.length - 1;
      await this.faultPoint('mcp:stage:escrowed');
      currentActivityTape()?.effect('mcp.call', () => ({
        server,
        method: 'tools/call',
        params: { name: tool, arguments: clean },
        escrowed: true,
        seq,
        ...(compensate ? { compensate } : {}),
      }));
      return { mode: 'escrowed', seq, server, tool };
    });
  }

  /** The escrowed calls in commit order, for verifiers and reports. */
  async calls(): Promise<EscrowedCall[]> {
    // Copies: the fold is kept for the next call.
    return structuredClone((await this.load())?.calls ?? []);
  }

  /**
   * Runs the escrowed calls in order. Each call's state is on disk before and after it runs, so a retry after a
   * crash skips what was applied and re-sends the one in flight with the same idempotency key.
   */
  commit(): Promise<McpCommitResult> {
    return this.exclusive(async () => {
      let escrow = await this.load();
      const out: McpCommitResult = { applied: 0, skipped: 0, calls: [] };
      if (!escrow) return out;
      for (const [i, call] of [...escrow.calls].entries()) {
        const uid = escrow.uids[i]!;
        if (call.state === 'applied') {
          out.skipped++;
          out.calls.push({ seq: call.seq, server: call.server, tool: call.tool, result: call.result });
          continue;
        }
        if (call.state !== 'escrowed' && call.state !== 'applying')
          throw new McpEscrowCorruptError(
            this.file,
            `call ${call.seq} is ${call.state}; it cannot be committed`,
          );
        escrow = await this.append(escrow, [{ op: 'state', uid, state: 'applying' }]);
        await this.faultPoint(`mcp:before-call:${call.seq}`);
        let result: McpToolResult;
        try {
          result = await this.invoke(call.server, call.tool, call.arguments, call.key, 'commit', call.seq);
        } catch (err) {
          // The server answered with an error, so the call did not happen: nothing to compensate for it.
          if (err instanceof McpToolFailedError)
            escrow = await this.append(escrow, [{ op: 'state', uid, state: 'failed' }]);
          throw err;
        }
        escrow = await this.append(escrow, [{ op: 'state', uid, state: 'applied', result }]);
        await this.faultPoint(`mcp:call-applied:${call.seq}`);
        out.applied++;
        out.calls.push({ seq: call.seq, server: call.server, tool: call.tool, result });
      }
      return out;
    });
  }

  /**
   * Undoes applied calls, newest first, with their compensating calls. A call caught mid-flight (`applying`)
   * may have happened, so it is compensated too; compensating tools must tolerate undoing what did not happen.
   */
  compensate(): Promise<McpCompensateResult> {
    return this.exclusive(async () => {
      let escrow = await this.load();
      const out: McpCompensateResult = { compensated: [], uncompensated: [] };
      if (!escrow) return out;
      const calls = [...escrow.calls];
      for (let i = calls.length - 1; i >= 0; i--) {
        const call = calls[i]!;
        const uid = escrow.uids[i]!;
        if (call.state !== 'applied' && call.state !== 'applying') continue;
        if (!call.compensate) {
          escrow = await this.append(escrow, [{ op: 'state', uid, state: 'uncompensated' }]);
          out.uncompensated.push({ seq: call.seq, server: call.server, tool: call.tool });
          continue;
        }
        const compensation = await this.invoke(
          call.server,
          call.compensate.tool,
          call.compensate.arguments,
          `${call.key}:compensate`,
          'compensate',
          call.seq,
        );
        escrow = await this.append(escrow, [{ op: 'state', uid, state: 'compensated', compensation }]);
        out.compensated.push({
          seq: call.seq,
          server: call.server,
          tool: call.tool,
          by: call.compensate.tool,
        });
      }
      return out;
    });
  }

  /**
   * Forgets the escrow: nothing escrowed runs. Calls a commit already sent and nobody undid (applied, or being
   * sent when it died, or without a compensating call) reached their server: they are kept (fsynced) in the
   * sent record beside the staging (`sentFile`, which outlives it) and returned, so the rollback can report
   * what the outside world may still hold.
   */
  discard(): Promise<SentCall[]> {
    return this.exclusive(async () => {
      const escrow = await readEscrowLog(this.file, null).catch(() => null);
      const sent: SentCall[] = (escrow?.calls ?? [])
        // Failed calls did not happen, compensated ones were undone: what may still be out there is kept.
        .filter((c) => c.state === 'applying' || c.state === 'applied' || c.state === 'uncompensated')
        .map((c) => ({
          seq: c.seq,
          key: c.key,
          server: c.server,
          tool: c.tool,
          arguments: c.arguments,
          state: c.state,
          ...(c.result !== undefined ? { result: c.result } : {}),
          ...(c.compensation !== undefined ? { compensation: c.compensation } : {}),
        }));
      if (sent.length > 0) {
        await fs.mkdir(path.dirname(this.sentFile), { recursive: true });
        await atomicWriteJson(this.sentFile, {
          format: SENT_FORMAT,
          escrow: escrow!.id,
          discardedAt: new Date().toISOString(),
          calls: sent,
        });
      }
      await fs.rm(this.stagingDir, { recursive: true, force: true });
      return sent;
    });
  }

  private async invoke(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    key: string | undefined,
    phase: 'live' | 'commit' | 'compensate',
    seq?: number,
  ): Promise<McpToolResult> {
    const cfg = this.connections.config(server);
    const tape = currentActivityTape();
    const record = (outcome: { result?: unknown; error?: unknown }) =>
      tape?.effect('mcp.call', () => ({
        server,
        method: 'tools/call',
        params: { name: tool, arguments: args },
        phase,
        ...(seq !== undefined ? { seq } : {}),
        ...outcome,
      }));
    const client = await this.connections.client(server);
    let result: McpToolResult;
    try {
      result = (await client.callTool(
        { name: tool, arguments: args, ...(key ? { _meta: { [IDEMPOTENCY_META_KEY]: key } } : {}) },
        undefined,
        { timeout: cfg.callTimeoutMs ?? 60_000 },
      )) as McpToolResult;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      record({ error: { message } });
      // JSON-RPC errors carry a numeric code: the server answered. Anything else is the transport failing.
      if (typeof (err as { code?: unknown }).code === 'number' && !/closed|timed out/i.test(message))
        throw new McpToolFailedError(server, tool, message, err);
      await this.connections.drop(server);
      throw new McpServerUnavailableError(server, `the call to ${tool} got no answer (${message})`, err);
    }
    if (result.isError) {
      record({ error: { message: textOf(result) }, result });
      throw new McpToolFailedError(server, tool, textOf(result) || 'the tool reported isError without text');
    }
    record({ result });
    return result;
  }

  /**
   * The escrow as the log says now. The fold of this instance's last read or append is reused while the file is
   * the same one at the same length and time (it only grows), so a run of calls reads the log once, not once per
   * call.
   */
  private async load(): Promise<EscrowFold | null> {
    const st = await fs.stat(this.file).catch(() => null);
    const c = this.cached;
    if (st !== null && c !== null && c.ino === st.ino && c.size === st.size && c.mtimeMs === st.mtimeMs)
      return c.fold;
    const fold = await readEscrowLog(this.file, new Set(this.connections.names()));
    this.cached =
      st === null || fold === null ? null : { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, fold };
    return fold;
  }

  private async append(escrow: EscrowFold | null, records: EscrowRecord[], id?: string): Promise<EscrowFold> {
    await fs.mkdir(this.stagingDir, { recursive: true });
    const fold = await appendEscrowLog(this.file, escrow, records, true, id);
    const st = await fs.stat(this.file);
    // Another writer's append in between leaves the file longer than this fold: the next load reads it.
    this.cached = st.size === fold.size ? { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, fold } : null;
    return fold;
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => {});
    return run;
  }
}
