import type { WorkflowHandle } from '@temporalio/client';
import { contentStoreFor } from '../../src/recorder/content';
import { payloadJson } from '../../src/temporal/content/historyPayloads';

type HistoryEvent = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>[number];
type Scheduled = NonNullable<HistoryEvent['activityTaskScheduledEventAttributes']>;
type Completed = NonNullable<HistoryEvent['activityTaskCompletedEventAttributes']>;

/** Each activity the server recorded as completed, in history order, with the event that scheduled it. */
async function completions(
  handle: WorkflowHandle,
): Promise<{ scheduled: Scheduled; completed: Completed }[]> {
  const history = await handle.fetchHistory();
  const scheduled = new Map<string, Scheduled>();
  const out: { scheduled: Scheduled; completed: Completed }[] = [];
  for (const event of history.events ?? []) {
    const s = event.activityTaskScheduledEventAttributes;
    if (s) scheduled.set(String(event.eventId), s);
    const c = event.activityTaskCompletedEventAttributes;
    const from = c && scheduled.get(String(c.scheduledEventId));
    if (c && from) out.push({ scheduled: from, completed: c });
  }
  return out;
}

/** How many activities of this type the server has recorded as completed. */
export async function completedActivities(handle: WorkflowHandle, activityType?: string): Promise<number> {
  return (await completions(handle)).filter(
    (c) => !activityType || c.scheduled.activityType?.name === activityType,
  ).length;
}

/**
 * The input and result (each the first payload, as JSON) of every completed activity of this type; payloads the
 * worker moved to the content store are read back from it.
 */
export async function completedActivityCalls<I, R>(
  handle: WorkflowHandle,
  activityType: string,
): Promise<{ input: I; result: R }[]> {
  const content = contentStoreFor();
  const calls = (await completions(handle)).filter((c) => c.scheduled.activityType?.name === activityType);
  return Promise.all(
    calls.map(async (c) => ({
      input: (await payloadJson(c.scheduled.input?.payloads?.[0], content)) as I,
      result: (await payloadJson(c.completed.result?.payloads?.[0], content)) as R,
    })),
  );
}

export async function waitUntil(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
}
