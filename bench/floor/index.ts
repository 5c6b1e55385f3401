/** The bare-Temporal floor the e2e bench measures Jukebox against. */
import path from 'node:path';

export { type FloorActivities, floorActivities } from './activities';
export const FLOOR_WORKFLOWS_PATH = path.join(__dirname, 'workflows.ts');
