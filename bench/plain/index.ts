/** The page agent the plain Temporal way, the peer of the history bench. */
import path from 'node:path';

export { type PlainPageActivities, plainPageActivities } from './activities';
export const PLAIN_WORKFLOWS_PATH = path.join(__dirname, 'workflows.ts');
