import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { bundleAgentWorkflows } from '../../../src/temporal';

const ROOT = path.resolve(__dirname, '../../..');

/** The files biome's noNodejsModules rule covers: the override that switches it on. */
function lintedWorkflowFiles(): string[] {
  const biome = JSON.parse(readFileSync(path.join(ROOT, 'biome.json'), 'utf8')) as {
    overrides: { includes: string[]; linter?: { rules?: { correctness?: { noNodejsModules?: unknown } } } }[];
  };
  const override = biome.overrides.find((o) => o.linter?.rules?.correctness?.noNodejsModules === 'error');
  if (!override) throw new Error('biome.json has no override switching noNodejsModules on');
  return override.includes;
}

const covered = (file: string, globs: string[]) =>
  globs.some((g) => (g.endsWith('/**') ? file.startsWith(g.slice(0, -2)) : file === g));

describe('jukebox/workflow', () => {
  it('bundles for the workflow sandbox, and every source file in its closure is under the no-Node lint rule', async () => {
    // The entry and both workflow interceptor modules a Jukebox worker bundles: what runs inside the sandbox.
    const bundle = await bundleAgentWorkflows({
      workflowsPath: path.join(__dirname, 'fixtures/workflowEntry.ts'),
      workflowInterceptorModules: [
        path.join(ROOT, 'src/temporal/workflow/tapeOutcomeInterceptors.ts'),
        path.join(ROOT, 'src/temporal/workflow/telemetryInterceptors.ts'),
      ],
    });
    const sources = [...bundle.code.matchAll(/^\/\*\*\*\/ "\.\/(src\/[^"]+)"/gm)].map((m) => m[1]!);
    expect(sources).toContain('src/temporal/workflow/agentWorkflow.ts');
    expect(sources).toContain('src/agent/context.ts');
    const globs = lintedWorkflowFiles();
    const uncovered = sources.filter((f) => !covered(f, globs));
    // A file new to the closure: add it to the noNodejsModules override in biome.json.
    expect(uncovered).toEqual([]);
  });
});
