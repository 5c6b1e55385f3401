/** The recording suite's workflows: the sample's growing chat and the flat run. */
import { agentWorkflow } from '../../src/temporal/workflow';
import { flatAgent as flatAgentDefinition } from './agent';

export { researchAgent } from '../../examples/sample/workflows';
export const flatAgent = agentWorkflow(flatAgentDefinition);
