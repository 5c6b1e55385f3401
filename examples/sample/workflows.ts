/** The sample's workflows module: deterministic orchestration only; the agent's I/O runs in activities. */
import { agentWorkflow } from '../../src/temporal/workflow';
import { researchAgent as researchAgentDefinition } from './agent';

export const researchAgent = agentWorkflow(researchAgentDefinition);
