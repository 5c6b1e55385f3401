import { readFile } from 'node:fs/promises';
import { blake3 } from './tape';
import { toHex } from './tape/hash';

/**
 * The header's agentCodeHash: BLAKE3 of the workflow bundle the worker runs. The bundle is every line of
 * workflow-side code (agents, workflows, what they import) as webpack packed it, so any change to agent logic
 * changes the hash; activity code (tools, model clients) is not in it.
 */
export function hashBundleCode(code: string): string {
  return `blake3:${toHex(blake3(new TextEncoder().encode(code)))}`;
}

export async function hashWorkflowBundle(bundle: { code: string } | { codePath: string }): Promise<string> {
  return hashBundleCode('code' in bundle ? bundle.code : await readFile(bundle.codePath, 'utf8'));
}
