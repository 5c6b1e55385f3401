/**
 * Scheduling a tool step with the activity options its tool asks for: the call's `timeoutMs` / `retry` over the
 * tool definition's over the run's defaults. Deterministic: the definitions' policies come from the worker once
 * per run through a local activity, whose answer the history keeps, so a replay schedules every step exactly as
 * the original run did. Defaults and guarantees: docs/long-steps.md.
 */
import {
  ActivityCancellationType,
  type ActivityOptions,
  type LocalActivityOptions,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
} from '@temporalio/workflow';
import type { ToolCallOptions } from '../../agent/context';
import {
  mergeToolPolicies,
  TIMEOUT_IS_FINAL,
  type ToolPolicy,
  toolPolicyOf,
} from '../../agent/tools/toolPolicy';
import type { StepActivities, ToolStepInput } from '../activities/stepActivities';
import { checkedActivities } from './checkedActivities';
import { type AgentRunOptions, runKeyOf } from './runOptions';

type RunDefaults = Required<
  Pick<AgentRunOptions, 'stepTimeoutMs' | 'heartbeatTimeoutMs' | 'maximumAttempts' | 'initialRetryIntervalMs'>
> &
  Pick<AgentRunOptions, 'continued'>;

/** The activity options of one tool step, from its policy (call over definition) and the run's defaults. */
export function toolActivityOptions(o: RunDefaults, policy: ToolPolicy): ActivityOptions {
  const retry = policy.retry ?? {};
  const nonRetryable = [
    ...(retry.nonRetryableErrorTypes ?? []),
    ...(retry.retryTimeouts ? [] : [TIMEOUT_IS_FINAL]),
  ];
  return {
    startToCloseTimeout: policy.timeoutMs ?? o.stepTimeoutMs,
    heartbeatTimeout: o.heartbeatTimeoutMs,
    retry: {
      maximumAttempts: retry.maximumAttempts ?? o.maximumAttempts,
      initialInterval: retry.initialIntervalMs ?? o.initialRetryIntervalMs,
      backoffCoefficient: retry.backoffCoefficient ?? 2,
      ...(retry.maximumIntervalMs !== undefined ? { maximumInterval: retry.maximumIntervalMs } : {}),
      ...(nonRetryable.length ? { nonRetryableErrorTypes: nonRetryable } : {}),
    },
    // A cancelled run waits until the tool has stopped (its signal fired, its shell command was killed) before
    // it rolls back what the tool staged: the rollback never races a tool that is still writing.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  };
}

/** The same step as a local activity: no heartbeat (a local activity cannot send one). */
function localOptions(options: ActivityOptions): LocalActivityOptions {
  const { heartbeatTimeout: _, ...local } = options;
  return local as LocalActivityOptions;
}

/**
 * The tool steps of one run. `run(input, call, local)` schedules `toolStep` as an activity task or, when `local`,
 * as a local activity, with the options the tool's policy gives.
 */
export function toolSteps(o: RunDefaults) {
  // Runs that started before tools had policies keep their options: their histories have no policy marker.
  const legacyRetry = {
    maximumAttempts: o.maximumAttempts,
    initialInterval: o.initialRetryIntervalMs,
    backoffCoefficient: 2,
  };
  const legacy = proxyActivities<StepActivities>({
    startToCloseTimeout: o.stepTimeoutMs,
    heartbeatTimeout: o.heartbeatTimeoutMs,
    retry: legacyRetry,
  });
  const legacyLocal = proxyLocalActivities<StepActivities>({
    startToCloseTimeout: o.stepTimeoutMs,
    retry: legacyRetry,
  });

  let definitions: Promise<Record<string, ToolPolicy>> | undefined;
  const loadDefinitions = async (): Promise<Record<string, ToolPolicy>> => {
    try {
      const found = await proxyLocalActivities<StepActivities>({
        startToCloseTimeout: 10_000,
        retry: { maximumAttempts: 3, initialInterval: 100 },
      }).toolPolicies();
      return found ?? {};
    } catch (err) {
      // A worker without the activity (or one that failed it) leaves every tool on the run's defaults; the
      // failure is in the history, so a replay takes the same branch.
      log.warn("could not read the tools' timeouts and retry policies; using the run's", {
        error: String(err),
      });
      return {};
    }
  };

  const schedule = (
    found: Record<string, ToolPolicy>,
    input: ToolStepInput,
    callPolicy: ReturnType<typeof toolPolicyOf>,
    local: boolean,
  ): Promise<unknown> => {
    const options = toolActivityOptions(o, mergeToolPolicies(found[input.name], callPolicy));
    return checkedActivities(
      local
        ? proxyLocalActivities<StepActivities>(localOptions(options))
        : proxyActivities<StepActivities>(options),
      runKeyOf(o),
    ).toolStep(input);
  };

  return {
    run(input: ToolStepInput, call: ToolCallOptions | undefined, local: boolean): Promise<unknown> {
      try {
        const callPolicy = toolPolicyOf(call ?? {}, `ctx.tool(${JSON.stringify(input.name)})`);
        if (!patched('jukebox.tool-policies'))
          return checkedActivities(local ? legacyLocal : legacy, runKeyOf(o)).toolStep(input);
        definitions ??= loadDefinitions();
        // One `then`, not an async function and an await (a stack capture each in the sandbox), and the step is
        // scheduled in the same microtask as before: after the definitions' promise, even once it has resolved.
        return definitions.then((found) => schedule(found, input, callPolicy, local));
      } catch (err) {
        return Promise.reject(err);
      }
    },
  };
}
