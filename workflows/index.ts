/**
 * Every workflow a Jukebox worker runs. Deterministic orchestration only: all I/O is in activities/.
 * Add your own agents here: `export const myAgent = agentWorkflow(myAgentDefinition)`.
 */
import { accountingAgent as accountingAgentDefinition } from '../agents/accounting/agent';
import { researchAgent as researchAgentDefinition } from '../agents/sample/agent';
import { agentWorkflow } from './agentWorkflow';

export { agentGroupWorkflow, groupMessageSignal } from './agentGroupWorkflow';
export { progressQuery } from './agentWorkflow';
export const researchAgent = agentWorkflow(researchAgentDefinition);
export const accountingAgent = agentWorkflow(accountingAgentDefinition);
