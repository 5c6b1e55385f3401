/** The sample research agent the plain Temporal way, the equal-work peer of the load bench. */
import path from 'node:path';

export { type PlainResearchActivities, plainResearchActivities } from './activities';
export const PLAIN_RESEARCH_WORKFLOWS_PATH = path.join(__dirname, 'workflows.ts');
