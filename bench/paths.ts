import path from 'node:path';

/** The example agents' workflows module, which the benchmarks run. */
export const EXAMPLE_WORKFLOWS_PATH = path.join(__dirname, '../examples/workflows.ts');
