import path from 'node:path';

/** The example agents' workflows module, which the benchmarks run. */
export const EXAMPLE_WORKFLOWS_PATH = path.join(__dirname, '../examples/workflows.ts');

/** The `jbx` a user runs: the built package's compiled CLI (`npm run bench` builds it first). */
export const JBX_BIN = path.join(__dirname, '../dist/cli/jbx.js');
