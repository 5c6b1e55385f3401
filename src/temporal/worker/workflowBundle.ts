import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';

/** This project's workflows module: the agents a Jukebox worker runs unless told otherwise. */
export const DEFAULT_WORKFLOWS_PATH = path.join(__dirname, '../../../examples/workflows.ts');

const silent = { log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {} };

/**
 * Bundles a workflows module once, without webpack's report on the terminal. Workers given the bundle skip the
 * seconds of bundling at start-up (tests and benchmarks start many), and the recorder hashes it for the tape.
 */
export function bundleAgentWorkflows(workflowsPath = DEFAULT_WORKFLOWS_PATH) {
  return bundleWorkflowCode({ workflowsPath, logger: silent });
}
