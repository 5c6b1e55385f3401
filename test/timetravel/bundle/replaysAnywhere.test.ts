import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { researchTools } from '../../../examples/sample/tools';
import { localEndpoints } from '../../../src/llm';
import { blake3 } from '../../../src/recorder/tape';
import { captureRunHistory, claimOf, loadStoredHistory, startAgent } from '../../../src/temporal';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import {
  BundleCorruptError,
  type BundleManifest,
  decodeBundle,
  encodeBundle,
  openBundle,
} from '../../../src/timetravel/bundle';
import { connectTestWorker } from '../../support/temporal';
import { runJbx } from '../replay/jbx';
import { QUESTION, SAMPLE_SCRIPT } from '../replay/recordedRun';

const ROOT = path.resolve(__dirname, '../../..');

/**
 * An agent whose source lives only in a temporary folder, deleted before the bundle is replayed: its
 * definition in one module (as offline replay finds agents), the workflow wrapping it in the workflows module.
 */
const AGENT_SOURCE = `
import { defineAgent, runToolLoop } from ${JSON.stringify(path.join(ROOT, 'src/agent'))};
import { researchToolSpecs } from ${JSON.stringify(path.join(ROOT, 'examples/sample/agent'))};

export const moonAgent = defineAgent<{ question: string }, { answer: string; turns: number }>(
  'moonAgent',
  async (ctx, input) => {
    const r = await runToolLoop(ctx, {
      provider: 'openai',
      model: 'gpt-4o-mini',
      system: 'Bundle test agent: look things up, then answer in capitals.',
      messages: [{ role: 'user', content: input.question }],
      tools: researchToolSpecs,
      maxTurns: 6,
    });
    return { answer: r.text.toUpperCase(), turns: r.turns };
  },
);
`;
const WORKFLOWS_SOURCE = `
import { agentWorkflow } from ${JSON.stringify(path.join(ROOT, 'src/temporal/workflow/agentWorkflow'))};
import { moonAgent as definition } from './agent';

export const moonAgent = agentWorkflow(definition);
`;

/** The payloads of a history that are claims on a content store rather than values. */
function claims(node: unknown): number {
  if (typeof node !== 'object' || node === null || node instanceof Uint8Array) return 0;
  const v = node as Record<string, unknown>;
  if (v.data instanceof Uint8Array && typeof v.metadata === 'object' && claimOf(v as never)) return 1;
  return Object.values(v).reduce<number>((n, x) => n + claims(x), 0);
}

/** The blob hashes a history's claims name. */
function claimHashes(node: unknown, out = new Set<string>()): Set<string> {
  if (typeof node !== 'object' || node === null || node instanceof Uint8Array) return out;
  const v = node as Record<string, unknown>;
  const claim =
    v.data instanceof Uint8Array && typeof v.metadata === 'object' ? claimOf(v as never) : undefined;
  if (claim?.hash) out.add(claim.hash);
  else for (const x of Object.values(v)) claimHashes(x, out);
  return out;
}

describe('a .jbxb bug report replays anywhere', () => {
  const work = mkdtempSync(path.join(os.tmpdir(), 'jbx-bundle-'));
  const source = path.join(work, 'agent-src');
  const tapeDir = path.join(work, 'tapes');
  const report = path.join(work, 'out', 'report.jbxb');
  let model: ModelServer;
  let tape: string;

  beforeAll(async () => {
    mkdirSync(source, { recursive: true });
    writeFileSync(path.join(source, 'agent.ts'), AGENT_SOURCE);
    writeFileSync(path.join(source, 'workflows.ts'), WORKFLOWS_SOURCE);
    // A project of its own, with the dependencies its bundler resolves (the link goes with the source).
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(source, 'node_modules'));
    model = await startModelServer({ script: SAMPLE_SCRIPT });
    const env = await connectTestWorker({
      endpoints: localEndpoints(model.url),
      tools: researchTools,
      workflowsPath: path.join(source, 'workflows.ts'),
      tape: { dir: tapeDir },
    });
    try {
      const handle = await startAgent(
        'moonAgent',
        { question: QUESTION },
        {
          connection: env.connection,
          namespace: env.namespace,
          taskQueue: env.taskQueue,
          runOptions: { maximumAttempts: 1 },
        },
      );
      await handle.result();
      ({ tapeFile: tape } = await captureRunHistory(handle, tapeDir));
    } finally {
      await env.close();
    }
  });
  afterAll(async () => {
    await model?.close();
    rmSync(work, { recursive: true, force: true });
  });

  it('jbx bundle packs the tape, its history and the code that recorded it, all hashed', async () => {
    mkdirSync(path.dirname(report), { recursive: true });
    const r = await runJbx(['bundle', tape, '-o', report, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const written = JSON.parse(r.stdout) as { manifest: BundleManifest; bytes: number; hash: string };
    expect(written.bytes).toBe(readFileSync(report).length);
    const m = written.manifest;
    expect(m.tape).toMatchObject({ workflowType: 'moonAgent', sealed: true, outcome: 'completed' });
    expect(m.history?.eventCount).toBeGreaterThan(20);
    expect(m.parts.map((p) => p.kind)).toEqual(['tape', 'history', 'workflowCode', 'content']);
    expect(m.workflowCode.hash).toBe(m.tape.agentCodeHash);
    expect(m.parts[0]!.bytes).toBe(readFileSync(tape).length);
    // The run's large payloads are in its content store, the history holding claims on them. The bundle's history
    // is the stored file byte for byte, claims and all, and its content part holds each blob they name, so
    // Temporal's replayer needs no store where it is received.
    const stored = loadStoredHistory(tape);
    const opened = openBundle(report);
    expect(claims(stored.history)).toBeGreaterThan(0);
    expect(Buffer.from(opened.parts.find((p) => p.kind === 'history')!.data)).toEqual(
      readFileSync(path.join(path.dirname(tape), stored.sidecar.history)),
    );
    expect(m.content?.blobs).toBe(opened.content.size);
    expect(opened.content.size).toBeGreaterThanOrEqual(claimHashes(stored.history).size);
    for (const hash of claimHashes(stored.history)) expect(opened.content.has(hash)).toBe(true);
  });

  it('replays offline and with --temporal from an empty folder, with no agent source and no network', async () => {
    rmSync(source, { recursive: true, force: true });
    const fresh = mkdtempSync(path.join(work, 'fresh-'));
    copyFileSync(report, path.join(fresh, 'report.jbxb'));
    const offline = await runJbx(['replay', 'report.jbxb', '--json'], { cwd: fresh, offline: true });
    expect(offline.code, offline.stderr).toBe(0);
    const o = JSON.parse(offline.stdout);
    expect(o).toMatchObject({
      status: 'match',
      workflowType: 'moonAgent',
      replayed: 7,
      recordedOutcome: 'completed',
    });
    expect(o.output.answer).toMatch(/^THE MOON IS ABOUT 384,400 KM AWAY/);
    expect(o.agentModule).toContain('report.jbxb#workflow-bundle.js');

    const temporal = await runJbx(['replay', '--temporal', 'report.jbxb', '--json'], {
      cwd: fresh,
      offline: true,
    });
    expect(temporal.code, temporal.stderr).toBe(0);
    expect(JSON.parse(temporal.stdout)).toMatchObject({ deterministic: true });

    const verified = await runJbx(['verify', 'report.jbxb', '--json'], { cwd: fresh, offline: true });
    expect(verified.code, verified.stderr).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({
      ok: true,
      kind: 'bundle',
      tape: { ok: true, sealed: true },
    });
    expect(existsSync(source)).toBe(false);
  });

  it('a damaged bundle exits 3 from verify and replay, naming what failed', async () => {
    const bytes = readFileSync(report);
    const damaged = path.join(work, 'damaged.jbxb');
    const m = openBundle(report).parts;
    const flip = (at: number) => {
      const copy = Buffer.from(bytes);
      copy.writeUInt8(copy.readUInt8(at) ^ 0x01, at);
      writeFileSync(damaged, copy);
    };
    flip(m[1]!.offset + 500); // inside the tape
    let r = await runJbx(['verify', damaged]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('part 1 fails its BLAKE3 check');
    flip(m[3]!.offset + 10_000); // inside the workflow code
    r = await runJbx(['replay', damaged]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('part 3 fails its BLAKE3 check');
    flip(bytes.length - 5); // the whole-file hash itself
    expect((await runJbx(['replay', '--temporal', damaged])).stderr).toContain('whole-file BLAKE3');
    writeFileSync(damaged, bytes.subarray(0, bytes.length - 1000));
    r = await runJbx(['verify', damaged, '--json']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('cut short');
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, kind: 'bundle', code: 'BUNDLE_TRUNCATED' });
  });

  it('a bundle rebuilt with other workflow code, every hash recomputed, is still refused', () => {
    const parts = decodeBundle(readFileSync(report), report);
    const manifest = JSON.parse(new TextDecoder().decode(parts[0]!.data)) as BundleManifest;
    const code = new TextEncoder().encode(`${new TextDecoder().decode(parts[3]!.data)}\n// changed`);
    manifest.parts[2] = {
      ...manifest.parts[2]!,
      bytes: code.length,
      blake3: Buffer.from(blake3(code)).toString('hex'),
    };
    const forged = encodeBundle([
      { kind: 'manifest', name: 'manifest.json', data: new TextEncoder().encode(JSON.stringify(manifest)) },
      parts[1]!,
      parts[2]!,
      { kind: 'workflowCode', name: parts[3]!.name, data: code },
      ...parts.slice(4),
    ]);
    expect(() => openBundle('forged.jbxb', forged)).toThrow(BundleCorruptError);
    expect(() => openBundle('forged.jbxb', forged)).toThrow(
      /workflow code hashes to .*; the tape was recorded by/,
    );
  });

  it('jbx bundle says where to find the recording code when it is not kept', async () => {
    const bare = mkdtempSync(path.join(work, 'bare-'));
    const copy = path.join(bare, path.basename(tape));
    copyFileSync(tape, copy);
    const r = await runJbx(['bundle', copy, '-o', path.join(bare, 'x.jbxb'), '--no-history']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /the workflow code that recorded .* \(agentCodeHash blake3:[0-9a-f]{64}\) is not in/,
    );
    expect(r.stderr).toContain('--code-dir');
    const ok = await runJbx([
      'bundle',
      copy,
      '-o',
      path.join(bare, 'x.jbxb'),
      '--no-history',
      '--code-dir',
      path.join(tapeDir, 'code'),
    ]);
    expect(ok.code, ok.stderr).toBe(0);
    const noHistory = await runJbx(['replay', '--temporal', path.join(bare, 'x.jbxb')]);
    expect(noHistory.code).toBe(1);
    expect(noHistory.stderr).toContain('holds no workflow history');
  });
});
