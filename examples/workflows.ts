/**
 * Every example agent in one workflows module, for workers that serve them all (this repository's tests and
 * benchmarks). The sample and the accounting agent also have a workflows module of their own, which their
 * workers run.
 */
import { agentWorkflow } from '../src/temporal/workflow';
import { pageAgent as pageAgentDefinition } from './pages/agent';

export { agentGroupWorkflow, groupMessageSignal, progressQuery } from '../src/temporal/workflow';
export { accountingAgent } from './accounting/workflows';
export { researchAgent } from './sample/workflows';
export const pageAgent = agentWorkflow(pageAgentDefinition);
