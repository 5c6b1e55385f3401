/**
 * Errors a step gave the agent, carried across a continue-as-new: the next segment answers that step by throwing
 * the same error again, so an agent that caught it and went on goes on the same way. An error becomes plain
 * data (its class name, message, own fields and cause) and comes back as an instance of its class, for the
 * classes that reach agent code (Temporal's failures, Jukebox's workflow-side errors); `instanceof` and
 * `code` checks hold. Deterministic and free of Node APIs: runs in the workflow sandbox.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  ChildWorkflowFailure,
  ServerFailure,
  TerminatedFailure,
  TimeoutFailure,
} from '@temporalio/common';
import { ApprovalRejectedError, ApprovalTimedOutError } from '../../agent/approval';
import { CommitRolledBackError } from '../../agent/commit';
import { BoothUnavailableError } from '../../agent/context';
import { AgentTurnLimitError } from '../../agent/toolLoop';
import { GateRefusedError } from '../../booth/verifiers';
import { BreakerTrippedError } from '../../breaker/errors';
import { JukeboxError } from '../../errors/JukeboxError';
import { ContentDamagedError, ContentMissingError } from '../../recorder/content/errors';
import { ToolApprovalLoopError } from './toolApproval';

export interface CarriedError {
  name: string;
  message: string;
  /** The error's own fields (code, type, details, part, verdicts, ...), as JSON. */
  fields: Record<string, unknown>;
  cause?: CarriedError;
}

type ErrorClass = { prototype: object };

const CLASSES: Record<string, ErrorClass> = {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  ChildWorkflowFailure,
  ServerFailure,
  TerminatedFailure,
  TimeoutFailure,
  AgentTurnLimitError,
  ApprovalRejectedError,
  ApprovalTimedOutError,
  BoothUnavailableError,
  BreakerTrippedError,
  CommitRolledBackError,
  ContentDamagedError,
  ContentMissingError,
  GateRefusedError,
  ToolApprovalLoopError,
};

// The raw failure proto holds bytes JSON cannot carry; the rest is rebuilt from the fields.
const SKIPPED = new Set(['stack', 'message', 'cause', 'name', 'failure']);
const MAX_DEPTH = 8;

export function carryError(err: unknown, depth = 0): CarriedError {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err), fields: {} };
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(err)) {
    if (SKIPPED.has(k) || v === undefined) continue;
    try {
      fields[k] = JSON.parse(JSON.stringify(v));
    } catch {
      // A field JSON cannot carry (a cycle, a bigint) is left behind; the message still says what happened.
    }
  }
  const cause = (err as { cause?: unknown }).cause;
  return {
    name: err.name,
    message: err.message,
    fields,
    ...(cause !== undefined && depth < MAX_DEPTH ? { cause: carryError(cause, depth + 1) } : {}),
  };
}

export function reviveError(carried: CarriedError): Error {
  const known = CLASSES[carried.name];
  const proto = known
    ? known.prototype
    : typeof carried.fields.code === 'string'
      ? JukeboxError.prototype
      : ApplicationFailure.prototype;
  const err = Object.create(proto) as Error;
  Object.assign(err, carried.fields);
  Object.defineProperty(err, 'message', { value: carried.message, writable: true, configurable: true });
  if (!known) Object.defineProperty(err, 'name', { value: carried.name, configurable: true });
  if (!known && !(typeof carried.fields.code === 'string') && carried.fields.type === undefined)
    (err as ApplicationFailure & { type?: string }).type = carried.name;
  if (carried.cause)
    Object.defineProperty(err, 'cause', {
      value: reviveError(carried.cause),
      writable: true,
      configurable: true,
    });
  Object.defineProperty(err, 'stack', {
    value: `${carried.name}: ${carried.message}\n    (answered from an earlier segment of this run)`,
    writable: true,
    configurable: true,
  });
  return err;
}
