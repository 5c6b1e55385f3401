/** The accounting quickstart's workflows module: the agent as a workflow (its I/O runs in activities). */
import { agentWorkflow } from '../../src/temporal/workflow';
import { accountingAgent as accountingAgentDefinition } from './agent';

export const accountingAgent = agentWorkflow(accountingAgentDefinition);
