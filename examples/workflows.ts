/**
 * Every workflow a Jukebox worker runs. Deterministic orchestration only: all I/O is in activities/.
 * Add your own agents here: `export const myAgent = agentWorkflow(myAgentDefinition)`.
 */

import { agentWorkflow } from '../src/temporal/workflow/agentWorkflow';
import { accountingAgent as accountingAgentDefinition } from './accounting/agent';
import { pageAgent as pageAgentDefinition } from './pages/agent';
import { researchAgent as researchAgentDefinition } from './sample/agent';

export { agentGroupWorkflow, groupMessageSignal } from '../src/temporal/workflow/agentGroupWorkflow';
export { progressQuery } from '../src/temporal/workflow/agentWorkflow';
export const researchAgent = agentWorkflow(researchAgentDefinition);
export const accountingAgent = agentWorkflow(accountingAgentDefinition);
export const pageAgent = agentWorkflow(pageAgentDefinition);
