import { mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lineDiff, startViewer, type Viewer } from '../../../src/cli/viewer';
import { recordEffectsRun } from './viewerFixtures';

/** A raw request, so the test controls the Host header and the exact path bytes. */
function get(
  viewer: Viewer,
  pathname: string,
  options: { host?: string; method?: string } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: viewer.port,
        path: pathname,
        method: options.method ?? 'GET',
        headers: { host: options.host ?? `127.0.0.1:${viewer.port}` },
      },
      (res) => {
        let body = '';
        res.on('data', (d) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('the viewer server only serves its tape folder, only on 127.0.0.1', () => {
  let dir: string;
  let outside: string;
  let viewer: Viewer;
  let tapeId: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'jbx-view-served-'));
    outside = mkdtempSync(path.join(os.tmpdir(), 'jbx-view-outside-'));
    tapeId = path.basename(await recordEffectsRun(dir), '.jbx');
    // A tape outside the folder, reachable only through a symlink placed inside it.
    const secret = await recordEffectsRun(outside);
    symlinkSync(secret, path.join(dir, 'escape.jbx'));
    writeFileSync(path.join(outside, 'secret.jbx'), 'not yours');
    viewer = await startViewer({ dir });
  });
  afterAll(async () => {
    await viewer?.close();
  });

  it('listens on 127.0.0.1 and answers the API and its own files with a strict content policy', async () => {
    expect(viewer.url).toBe(`http://127.0.0.1:${viewer.port}/`);
    const runs = await get(viewer, '/api/runs');
    expect(runs.status).toBe(200);
    expect(JSON.parse(runs.body).rows.map((r: { id: string }) => r.id)).toContain(tapeId);
    const page = await get(viewer, '/');
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toMatch(/script-src 'self'/);
    expect(page.headers['content-security-policy']).not.toMatch(/unsafe-inline|unsafe-eval/);
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect((await get(viewer, '/app.mjs')).headers['content-type']).toMatch(/^text\/javascript/);
    const ids = async (q: string) =>
      JSON.parse((await get(viewer, `/api/runs?${q}`)).body).rows.map((r: { id: string }) => r.id);
    expect(await ids('since=1h')).toEqual([tapeId]);
    expect(await ids('since=2999-01-01')).toEqual([]);
    expect(await ids('workflow=accountingAgent&outcome=tripped&sort=cost&limit=1')).toEqual([tapeId]);
    expect(await ids('outcome=completed')).toEqual([]);
    const run = JSON.parse((await get(viewer, `/api/runs/${tapeId}`)).body);
    expect(run.verification.status).toBe('intact');
    expect(run.rows.length).toBeGreaterThan(0);
  });

  it('refuses tape ids and paths that leave the folder', async () => {
    for (const p of [
      '/api/runs/..%2F..%2Fetc%2Fpasswd',
      `/api/runs/..%2F${path.basename(outside)}%2Fsecret`,
      '/api/runs/%2Fetc%2Fpasswd',
      '/api/runs/.hidden',
      '/api/runs/escape',
      `/api/diff?a=${tapeId}&b=..%2F..%2Fetc%2Fhosts`,
    ]) {
      const r = await get(viewer, p);
      expect(r.status, p).toBe(400);
      expect(JSON.parse(r.body).error, p).toMatch(/^refused: /);
    }
    expect((await get(viewer, '/api/runs/nothing-here')).status).toBe(404);
    expect((await get(viewer, '/../package.json')).status).toBe(404);
    expect((await get(viewer, '/%2e%2e/package.json')).status).toBe(404);
    expect((await get(viewer, '/server.ts')).status).toBe(404);
  });

  it('answers only GET to a Host naming it, and bad filters with a message', async () => {
    const rebound = await get(viewer, '/api/runs', { host: `attacker.example:${viewer.port}` });
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body).error).toMatch(/not this viewer/);
    expect((await get(viewer, '/api/runs', { method: 'POST' })).status).toBe(405);
    const bad = await get(viewer, '/api/runs?outcome=exploded');
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body).error).toMatch(/unknown outcome "exploded"/);
    expect((await get(viewer, `/api/runs/${tapeId}/rows/99999`)).status).toBe(404);
    expect((await get(viewer, `/api/runs/${tapeId}/rows/-1`)).status).toBe(400);
  });
});

describe('staged file line diff', () => {
  it('keeps common lines and marks inserted and removed ones, rebuilding both sides', () => {
    const a = 'h\nx\n1\n2\n3\ny\n';
    const b = 'h\n1\n2\nz\n3\ny\nw\n';
    const d = lineDiff(a, b);
    expect(d).toEqual([
      { op: ' ', text: 'h' },
      { op: '-', text: 'x' },
      { op: ' ', text: '1' },
      { op: ' ', text: '2' },
      { op: '+', text: 'z' },
      { op: ' ', text: '3' },
      { op: ' ', text: 'y' },
      { op: '+', text: 'w' },
    ]);
    const side = (keep: string) =>
      d
        .filter((l) => l.op !== keep)
        .map((l) => `${l.text}\n`)
        .join('');
    expect(side('+')).toBe(a);
    expect(side('-')).toBe(b);
    expect(lineDiff('', 'new\n')).toEqual([{ op: '+', text: 'new' }]);
  });
});
