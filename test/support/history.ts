import type { WorkflowHandle } from '@temporalio/client';

/** How many activities of this type the server has recorded as completed. */
export async function completedActivities(handle: WorkflowHandle, activityType?: string): Promise<number> {
  const history = await handle.fetchHistory();
  const scheduled = new Map<string, string>();
  let completed = 0;
  for (const event of history.events ?? []) {
    const s = event.activityTaskScheduledEventAttributes;
    if (s) scheduled.set(String(event.eventId), s.activityType?.name ?? '');
    const c = event.activityTaskCompletedEventAttributes;
    if (c && (!activityType || scheduled.get(String(c.scheduledEventId)) === activityType)) completed++;
  }
  return completed;
}

export async function waitUntil(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
}
