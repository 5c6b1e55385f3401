/** The floor: a bare Temporal workflow calling no-op activities one after another, no Jukebox in the way. */
import { proxyActivities } from '@temporalio/workflow';
import type { FloorActivities } from './activities';

const { noop } = proxyActivities<FloorActivities>({ startToCloseTimeout: 60_000 });

export async function floorWorkflow(activities: number): Promise<number> {
  for (let i = 0; i < activities; i++) await noop(i);
  return activities;
}
