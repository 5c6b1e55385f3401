/**
 * Verifiers and policy gates: checks over a run's staged change set (file diffs, SQL write set, escrowed MCP
 * calls) that run in the commit activity before anything becomes durable. A gate returns a verdict with a
 * reason a person can read: pass, refuse (one refusal stops the commit and the run rolls back), or ask a person
 * (the commit waits for their decision, everything staged kept intact).
 */
import { crossRealmError, JukeboxError, printable } from '../errors';
import type { EscrowedCall } from './mcp/escrow';
import type { SqlWriteSet } from './sql/stagedSql';
import type { Change } from './stagedWorkspace';

/** Everything a run has staged, as the gates see it. */
export interface BoothChangeSet {
  files: Change[];
  /** The SQL write set (`StagedSql.writeSet()`), or null when the run staged no SQL (or the booth has no database). */
  sql: SqlWriteSet | null;
  mcp: EscrowedCall[];
}

/**
 * A gate's answer. `needsApproval` is a refusal to anyone who does not know it (`ok: false`): only the commit
 * saga turns it into a wait for a person, so a reader that predates it still refuses.
 */
export type GateDecision =
  | { ok: true; reason?: string }
  | { ok: false; reason: string; needsApproval?: false }
  | { ok: false; reason: string; needsApproval: true };

/** The gate's three answers, for gates that read better with them. */
export const pass = (reason?: string): GateDecision => (reason ? { ok: true, reason } : { ok: true });
export const refuse = (reason: string): GateDecision => ({ ok: false, reason });
export const needsApproval = (reason: string): GateDecision => ({ ok: false, reason, needsApproval: true });

/**
 * What a gate is told besides the change set: `params`, the run's settings for this gate by name (a what-if
 * experiment's `--set gate.NAME.KEY=VALUE`, docs/experiments.md); empty for an ordinary run.
 */
export interface GateContext {
  params: Readonly<Record<string, unknown>>;
}

/**
 * Per gate name, the parameters a run passes to it (JSON values). Gates read what they know and ignore the
 * rest, so a run's parameters never break a gate that takes none.
 */
export type GateParams = Readonly<Record<string, Readonly<Record<string, unknown>>>>;

/** A gate is a plain function, registered on the worker by name; the workflow names the gates to run. */
export type Gate = (changes: BoothChangeSet, context?: GateContext) => GateDecision | Promise<GateDecision>;

export interface GateVerdict {
  gate: string;
  ok: boolean;
  reason: string;
  /** The gate asked a person; `ok` turns true once they approved (`approvedBy` says who). */
  needsApproval?: true;
  approvedBy?: string;
}

/** Verdicts that refuse outright (not asking a person). */
export const refusals = (verdicts: readonly GateVerdict[]) =>
  verdicts.filter((v) => !v.ok && v.needsApproval !== true);

/** Verdicts waiting for a person. */
export const askingApproval = (verdicts: readonly GateVerdict[]) =>
  verdicts.filter((v) => !v.ok && v.needsApproval === true);

/** A gate refused the change set: nothing was applied, the run is rolled back. */
export class GateRefusedError extends JukeboxError {
  readonly verdicts: GateVerdict[];
  constructor(verdicts: GateVerdict[]) {
    const refused = verdicts.filter((v) => !v.ok);
    super(
      'GATE_REFUSED',
      `commit refused by ${refused.map((v) => `gate ${v.gate}: ${v.reason}`).join('; ')}; nothing was applied and the staged changes were rolled back`,
      { nonRetryable: true },
    );
    this.verdicts = verdicts;
  }
}
crossRealmError('GateRefusedError', GateRefusedError);

/** The workflow named a gate the worker does not have. Refusing is the only safe reading of a missing check. */
export class GateUnknownError extends JukeboxError {
  constructor(name: string, known: string[]) {
    super(
      'GATE_UNKNOWN',
      `no verifier or gate named ${JSON.stringify(name)} is registered on this worker (known: ${known.join(', ') || 'none'}); add it to booth.gates in createJukeboxWorker`,
      { nonRetryable: true },
    );
  }
}
crossRealmError('GateUnknownError', GateUnknownError);

/**
 * Runs every named gate (all of them, so the report shows every reason, not just the first) and returns the
 * verdicts. A gate that throws refuses: a check that could not run has not passed.
 */
export async function runGates(
  names: readonly string[],
  registry: Readonly<Record<string, Gate>>,
  changes: BoothChangeSet,
  params: GateParams = {},
): Promise<GateVerdict[]> {
  const known = Object.keys(registry);
  for (const name of names) if (!Object.hasOwn(registry, name)) throw new GateUnknownError(name, known);
  const verdicts: GateVerdict[] = [];
  for (const name of names) {
    try {
      const d = await registry[name]!(changes, {
        params: (Object.hasOwn(params, name) && params[name]) || {},
      });
      const asks = !d.ok && d.needsApproval === true;
      verdicts.push({
        gate: name,
        ok: d.ok === true,
        reason: d.reason ?? (d.ok ? 'passed' : 'refused'),
        ...(asks ? { needsApproval: true as const } : {}),
      });
    } catch (err) {
      verdicts.push({
        gate: name,
        ok: false,
        reason: `the gate itself failed (${err instanceof Error ? err.message : String(err)})`,
      });
    }
  }
  return verdicts;
}

/** Throws GateRefusedError when any verdict refused. */
export function requirePassed(verdicts: GateVerdict[]): void {
  if (verdicts.some((v) => !v.ok)) throw new GateRefusedError(verdicts);
}

// ── ready-made gates ─────────────────────────────────────────────────────────────────────────────────────

/** Files may change only under these prefixes (relative to the workspace root, e.g. `ledger/`). */
export function filesOnlyUnder(prefixes: string[]): Gate {
  return ({ files }) => {
    const outside = files.filter(
      (c) =>
        !prefixes.some(
          (p) => c.path === p.replace(/\/$/, '') || c.path.startsWith(p.endsWith('/') ? p : `${p}/`),
        ),
    );
    return outside.length
      ? {
          ok: false,
          reason: `changes outside ${prefixes.join(', ')}: ${outside.map((c) => printable(c.path)).join(', ')}`,
        }
      : { ok: true, reason: `all ${files.length} file changes under ${prefixes.join(', ')}` };
  };
}

/** No staged file deletions. */
export function noFileDeletes(): Gate {
  return ({ files }) => {
    const deleted = files.filter((c) => c.op === 'delete');
    return deleted.length
      ? { ok: false, reason: `would delete ${deleted.map((c) => printable(c.path)).join(', ')}` }
      : { ok: true, reason: 'no deletions' };
  };
}

/**
 * No mode the booth refused: a change that asked for setuid, setgid or sticky bits (stripped at staging) fails
 * the commit instead of committing without them.
 */
export function noSetIdModes(): Gate {
  return ({ files }) => {
    const asked = files.filter((c) => c.modeRefused !== undefined);
    return asked.length
      ? {
          ok: false,
          reason: `asked for set-id or sticky modes: ${asked
            .map(
              (c) =>
                `${printable(c.path)} ${c.modeRefused!.requested.toString(8)} (${c.modeRefused!.bits.join(', ')})`,
            )
            .join(', ')}`,
        }
      : { ok: true, reason: 'no set-id or sticky modes asked for' };
  };
}

/** Escrowed MCP calls may only use these `server/tool` names. */
export function mcpToolsAllowed(allowed: string[]): Gate {
  return ({ mcp }) => {
    const bad = mcp.filter((c) => !allowed.includes(`${c.server}/${c.tool}`));
    return bad.length
      ? { ok: false, reason: `MCP calls not allowed: ${bad.map((c) => `${c.server}/${c.tool}`).join(', ')}` }
      : { ok: true, reason: `${mcp.length} MCP calls, all allowed` };
  };
}
