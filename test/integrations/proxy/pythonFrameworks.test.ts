import { mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { readTape, verifyTape } from '../../../src/recorder/tape';
import { startModelServer } from '../../../src/testing/modelserver';
import { spawnProxy } from './proxyProcess';
import { pythonVenv, runPythonTask } from './pythonVenv';

const SCRIPT = path.resolve(__dirname, '../../../examples/python/script.yaml');

/**
 * Each Python program runs twice: through `jbx proxy` recording in front of the local model server, then, with
 * the model server stopped, through `jbx proxy --replay TAPE` with no upstream at all. Same output both times.
 */
describe('Python frameworks record through jbx proxy and replay offline', () => {
  let python: string;
  beforeAll(() => {
    python = pythonVenv();
  }, 600_000);

  const cases = [
    { name: 'openai_task', framework: 'the official openai package', modelCalls: 2 },
    { name: 'autogen_task', framework: 'AutoGen (autogen-agentchat)', modelCalls: 2 },
    { name: 'crewai_task', framework: 'CrewAI', modelCalls: 2 },
  ];

  for (const c of cases)
    it(`${c.framework}: a multi-step task gives the same output recorded and replayed`, async () => {
      const tapeDir = mkdtempSync(path.join(os.tmpdir(), `jukebox-proxy-${c.name}-`));
      const model = await startModelServer({ script: SCRIPT });
      const recorder = await spawnProxy(['--upstream', model.url, '--tape-dir', tapeDir]);
      let recorded: unknown;
      try {
        recorded = await runPythonTask(python, c.name, `${recorder.url}/s/${c.name}/v1`);
      } finally {
        expect((await recorder.stop()).code).toBe(0);
        await model.close();
      }
      expect(model.requestCount()).toBe(c.modelCalls);

      const tapes = readdirSync(tapeDir).filter((f) => f.endsWith('.jbx'));
      expect(tapes).toHaveLength(1);
      const tape = path.join(tapeDir, tapes[0] as string);
      expect(tapes[0]?.startsWith(`${c.name}--`)).toBe(true);
      expect(verifyTape(tape)).toMatchObject({ ok: true, sealed: true });
      const kinds = readTape(tape).frames.map((f) => f.kind);
      expect(kinds.filter((k) => k === 'llm.request')).toHaveLength(c.modelCalls);
      expect(kinds.filter((k) => k === 'llm.response')).toHaveLength(c.modelCalls);
      // One chunk frame per call: a streamed call's events in one batch, a plain call's body as one entry.
      expect(kinds.filter((k) => k === 'llm.chunk')).toHaveLength(c.modelCalls);

      const replayer = await spawnProxy(['--replay', tape]);
      let replayed: unknown;
      try {
        replayed = await runPythonTask(python, c.name, `${replayer.url}/v1`);
      } finally {
        expect((await replayer.stop()).code).toBe(0);
      }
      expect(replayed).toEqual(recorded);
      expect(JSON.stringify(recorded)).toContain('384,400');
    });
});
