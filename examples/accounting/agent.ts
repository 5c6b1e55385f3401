/**
 * The quickstart's accounting agent (workflow code): it reads the ledger and the customer's account, stages a
 * refund (a ledger line, a balance update, a "notify customer" MCP call), and asks the Shadow Booth to commit
 * it through the refund policy gate. A refused or failed commit leaves everything as it was.
 */

import { type ApprovalOptions, type ApprovalOutcome, defineAgent, runToolLoop } from '../../src/agent';
import type { StagedSummary } from '../../src/agent/commit';
import { type CommitReport, CommitRolledBackError } from '../../src/agent/commit';
import type { GateVerdict } from '../../src/booth/verifiers';
import type { Provider, ToolSpec } from '../../src/llm/types';

export interface AccountingInput {
  /** What the operator asks, e.g. "Refund $120 to customer C-1001: duplicate charge." */
  request: string;
  provider?: Provider;
  model?: string;
  /**
   * Refunds above the autonomous threshold wait for a person (the refund-approval gate) instead of being
   * refused, with these options (timeout, onTimeout, who may decide).
   */
  approval?: ApprovalOptions;
}

export type AccountingOutput =
  | { answer: string; committed: true; report: CommitReport }
  | {
      answer: string;
      committed: false;
      reason: string;
      verdicts: GateVerdict[];
      discarded: StagedSummary | null;
      /** Who rejected it, or that nobody decided in time. */
      approval?: ApprovalOutcome;
    };

/** The gate every refund commit must pass (registered on the worker, see ./gates). */
export const REFUND_GATE = 'refund-threshold';
/** The same policy, asking a person instead of refusing above the threshold. */
export const REFUND_APPROVAL_GATE = 'refund-approval';

export const accountingToolSpecs: ToolSpec[] = [
  {
    name: 'get_account',
    description: "Read a customer's account (name, email, balance in cents) from the accounts database.",
    parameters: { type: 'object', properties: { customer: { type: 'string' } }, required: ['customer'] },
  },
  {
    name: 'read_ledger',
    description: 'Read the ledger (CSV: date, customer, type, amount_cents, memo).',
    parameters: { type: 'object', properties: {} },
  },
  {
    name: 'stage_refund',
    description:
      'Stage a refund: a ledger line, the balance update and a customer notification. Nothing is final until the run commits.',
    parameters: {
      type: 'object',
      properties: {
        customer: { type: 'string' },
        amount_cents: { type: 'integer', minimum: 1 },
        memo: { type: 'string' },
      },
      required: ['customer', 'amount_cents', 'memo'],
    },
  },
];

export const accountingAgent = defineAgent<AccountingInput, AccountingOutput>(
  'accountingAgent',
  async (ctx, input) => {
    const loop = await runToolLoop(ctx, {
      provider: input.provider ?? 'openai',
      model: input.model ?? 'gpt-4o-mini',
      system:
        'You are a careful accounting assistant. Check the account and the ledger before staging a refund; stage each refund once.',
      messages: [{ role: 'user', content: input.request }],
      tools: accountingToolSpecs,
      maxTurns: 8,
    });
    try {
      const report = await ctx.commit(
        input.approval
          ? { gates: [REFUND_APPROVAL_GATE], approval: input.approval }
          : { gates: [REFUND_GATE] },
      );
      return { answer: loop.text, committed: true, report };
    } catch (err) {
      // A gate's refusal (or a person's rejection) is an answer, not a crash: the run reports it; the booth has
      // already rolled back. Any other failed commit (a part that could not be applied) fails the run with its
      // typed error.
      if (err instanceof CommitRolledBackError && (err.part === 'verify' || err.part === 'approval'))
        return {
          answer: loop.text,
          committed: false,
          reason: err.reason,
          verdicts: err.verdicts,
          discarded: err.staged,
          ...(err.approval ? { approval: err.approval } : {}),
        };
      throw err;
    }
  },
);
