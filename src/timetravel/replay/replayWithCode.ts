import type { AgentCode } from './agentCode';
import { type ReplayReport, replayTape } from './replayTape';
import type { Timeline } from './timeline';

/**
 * A tape replayed with the code findAgentCode found: with a project's gates when it has them, and with its tools
 * staging again in a scratch booth when it has tools and a fixture world (closed after).
 */
export async function replayWithCode(
  file: string,
  timeline: Timeline,
  code: AgentCode,
): Promise<ReplayReport> {
  const h = timeline.tape.header;
  const staging = await code.restage?.({ workflowId: h.workflowId, runId: h.runId });
  try {
    return await replayTape(file, {
      agent: code.agent,
      timeline,
      ...(code.gates ? { gates: code.gates } : {}),
      ...(staging ? { staging } : {}),
    });
  } finally {
    await staging?.close();
  }
}
