import { forkRun } from '../../../src/temporal';
import type { ModelScript } from '../../../src/testing/modelserver';
import { QUESTION, recordingSetup, SAMPLE_SCRIPT } from '../replay/recordedRun';

/**
 * The sample conversation, except that gpt-4o looks one more thing up before dividing: a fork that swaps the
 * model at step 4 inserts two steps (an llm call and a tool call) into the timeline.
 */
export const DETOUR_SCRIPT: ModelScript = {
  name: 'detour-on-gpt-4o',
  turns: [
    {
      id: 'gpt-4o-detour',
      match: { model: 'gpt-4o', toolResult: '40075' },
      reply: {
        text: 'Let me check the radius too.',
        toolCalls: [{ name: 'lookup_fact', arguments: { topic: 'earth radius km' } }],
      },
      repeat: true,
    },
    {
      id: 'divide-after-detour',
      match: { toolResult: 'No fact is recorded' },
      reply: { toolCalls: [{ name: 'calculate', arguments: { expression: '384400 / 40075' } }] },
      repeat: true,
    },
    ...SAMPLE_SCRIPT.turns,
  ],
};

/** Records the sample run and a fork of it at step 4 on gpt-4o; returns both tapes. */
export async function recordRunAndFork() {
  const setup = await recordingSetup(DETOUR_SCRIPT);
  const { tapeFile: parent } = await setup.record({ question: QUESTION });
  const fork = await forkRun({
    parentTape: parent,
    atStep: 4,
    overrides: { model: 'gpt-4o' },
    connection: setup.env.connection,
    namespace: setup.env.namespace,
    taskQueue: setup.env.taskQueue,
    tapeDir: setup.tapeDir,
  });
  if (fork.error) throw new Error(`the fork failed: ${fork.error}`);
  return { setup, parent, fork: fork.tapeFile };
}
