/**
 * The step activities' answer for a step before the fork point: the parent tape's recorded response, after
 * checking the request is the one the parent sent, recorded onto the fork's own tape like a live step (request,
 * chunks, response or tool call, result, and the step's side-effect frames), so a fork's tape is complete on
 * its own and can be replayed or forked again. Nothing goes to the model or the tool.
 */

import { crossRealmError, JukeboxError } from '../../errors/JukeboxError';
import type { LlmRequest, LlmResponse } from '../../llm/types';
import type { ActivityTape } from '../../recorder/activityTape';
import type { TapeSession } from '../../recorder/store';
import { BlobRef, decodeBlob, type Tape } from '../../recorder/tape';
import { asRecorded, differences } from '../replay/compare';
import type { Timeline, TimelineStep } from '../replay/timeline';
import { ForkDivergenceError, ForkRequestError } from './errors';
import type { InheritedStep } from './lineage';
import { parentTimeline } from './parentTape';

/** A step failed in the parent; the fork inherits the failure as it inherits successes. */
export class InheritedStepError extends JukeboxError {
  constructor(step: number, recorded: { name: string; message: string; code?: string }) {
    super(
      recorded.code ?? 'FORK_INHERITED_STEP_FAILED',
      `step ${step} failed in the parent run (${recorded.message}); fork at step ${step} or earlier to run it live`,
      { nonRetryable: true },
    );
  }
}
crossRealmError('InheritedStepError', InheritedStepError);

function stepOf(t: Timeline, inherit: InheritedStep, step: number, kind: 'llm' | 'tool'): TimelineStep {
  const s = t.steps.find((x) => x.step === step);
  if (!s || s.kind !== kind)
    throw new ForkRequestError(
      `the parent tape ${inherit.parentTape} has no ${kind} step ${step} to inherit (it has ${t.steps.length} steps); fork at an earlier step`,
    );
  return s;
}

/** Copies blobs a parent payload references into the fork's tape, so its references do not dangle. */
async function copyBlobs(parent: Tape, s: TapeSession, value: unknown, step: number): Promise<void> {
  if (value instanceof BlobRef) {
    const blob = parent.blobs.get(value.hash);
    if (!blob) return;
    if (blob.encoding === 'msgpack') {
      const inner = decodeBlob(blob);
      await copyBlobs(parent, s, inner, step);
    }
    await s.writer.putBlob(blob.bytes, { step, encoding: blob.encoding });
    return;
  }
  if (Array.isArray(value)) for (const v of value) await copyBlobs(parent, s, v, step);
  else if (value && typeof value === 'object' && !(value instanceof Uint8Array))
    for (const v of Object.values(value)) await copyBlobs(parent, s, v, step);
}

const EFFECT_KINDS = new Set([
  'fs.mutation',
  'sql.mutation',
  'shell.exec',
  'mcp.call',
  'commit',
  'rollback',
  'breaker.trip',
]);

function copyEffects(parent: Tape, s: TimelineStep, tape: ActivityTape | undefined): void {
  for (const e of s.effects) {
    if (!EFFECT_KINDS.has(e.kind)) continue;
    const { activityId: _a, attempt: _t, ...payload } = e.payload;
    tape?.effect(e.kind as Parameters<ActivityTape['effect']>[0], async (session) => {
      await copyBlobs(parent, session, payload, s.step);
      return { ...payload, inheritedFrom: e.frame };
    });
  }
}

export async function answerInheritedLlmStep(
  input: { step: number; request: LlmRequest; inherit: InheritedStep },
  tape: ActivityTape | undefined,
): Promise<LlmResponse> {
  const t = parentTimeline(input.inherit.parentTape, input.inherit.parentTapeHash, input.inherit.forkStep);
  const s = stepOf(t, input.inherit, input.step, 'llm');
  const r = asRecorded(input.request) as Record<string, unknown>;
  const actual: Record<string, unknown> = {
    provider: r.provider,
    model: r.model,
    messages: r.messages ?? [],
  };
  for (const k of ['system', 'temperature', 'maxTokens', 'stream']) if (r[k] !== undefined) actual[k] = r[k];
  if (Array.isArray(r.tools) && r.tools.length) actual.tools = r.tools;
  const fields = differences(s.request, actual);
  if (fields.length) throw new ForkDivergenceError(input.step, input.inherit.parentTape, fields);
  await tape?.llmRequest(input.request);
  for (const c of s.chunks) {
    const [index, offsetMs, text, raw] = c as [number, number, string | null, unknown];
    tape?.llmChunk({ index, offsetMs, ...(text === null ? {} : { text }), raw: raw ?? null });
  }
  copyEffects(t.tape, s, tape);
  if (s.error || !s.response)
    throw new InheritedStepError(input.step, s.error ?? { name: 'Error', message: 'no response' });
  tape?.llmResponse(s.response);
  return structuredClone(s.response);
}

export async function answerInheritedToolStep(
  input: { step: number; name: string; args: Record<string, unknown>; inherit: InheritedStep },
  tape: ActivityTape | undefined,
): Promise<unknown> {
  const t = parentTimeline(input.inherit.parentTape, input.inherit.parentTapeHash, input.inherit.forkStep);
  const s = stepOf(t, input.inherit, input.step, 'tool');
  const fields = differences(
    { toolName: s.toolName, args: s.args },
    { toolName: input.name, args: asRecorded(input.args) },
  );
  if (fields.length) throw new ForkDivergenceError(input.step, input.inherit.parentTape, fields);
  await tape?.toolCall(input.name, input.args);
  copyEffects(t.tape, s, tape);
  if (s.error) {
    const err = new InheritedStepError(input.step, s.error);
    tape?.toolError(err);
    throw err;
  }
  const output = s.output === undefined ? null : structuredClone(s.output);
  tape?.toolResult(output);
  return output;
}
