import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startViewer, type Viewer } from '../../../src/cli/viewer';
import { followTape, type RunItem } from '../../../src/stream';
import { openSse, type SseEvent } from '../../support/sseClient';
import { recordEffectsRun } from './viewerFixtures';

async function all(events: AsyncIterable<SseEvent>): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

describe("jbx view's event stream of a run (GET /api/runs/ID/events)", () => {
  let dir: string;
  let viewer: Viewer;
  let id: string;
  let items: RunItem[];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'jbx-view-events-'));
    const file = await recordEffectsRun(dir);
    id = path.basename(file, '.jbx');
    items = [];
    for await (const item of followTape(file)) items.push(item);
    viewer = await startViewer({ dir });
  });
  afterAll(async () => {
    await viewer?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const url = (run: string, query = '') => `${viewer.url}api/runs/${encodeURIComponent(run)}/events${query}`;

  it("sends a sealed run's items as events, each id its position, then an end event", async () => {
    const res = await openSse(url(id));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const events = await all(res.events);
    expect(events.at(-1)).toEqual({ event: 'end', data: '{}' });
    const data = events.slice(0, -1);
    expect(items.length).toBeGreaterThan(5);
    expect(data.map((e) => e.event)).toEqual(items.map(() => 'message'));
    expect(data.map((e) => e.id)).toEqual(items.map((i) => String(i.position)));
    expect(data.map((e) => JSON.parse(e.data))).toEqual(JSON.parse(JSON.stringify(items)));
  });

  it('resumes after Last-Event-ID (or ?after=) with the next item: no gap, no duplicate', async () => {
    const mid = items[Math.floor(items.length / 2)]!;
    const rest = items.filter((i) => i.position > mid.position);
    for (const res of [
      await openSse(url(id), { lastEventId: String(mid.position) }),
      await openSse(url(id, `?after=${mid.position}`)),
    ]) {
      const events = await all(res.events);
      expect(events.slice(0, -1).map((e) => JSON.parse(e.data))).toEqual(JSON.parse(JSON.stringify(rest)));
      expect(events.at(-1)?.event).toBe('end');
    }
  });

  it('refuses a position that is not a whole number (400) and a run it does not serve (404), as JSON', async () => {
    const bad = await fetch(url(id), { headers: { 'last-event-id': 'abc' } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(
      /Last-Event-ID \(or after\) is the position of an event received/,
    );
    const missing = await fetch(url('no-such-run'));
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: string }).error).toMatch(/no tape "no-such-run"/);
    const hidden = await fetch(url('.hidden'));
    expect(hidden.status).toBe(400);
  });

  it('ends with a failure event naming the fault when the position is past the end of the tape', async () => {
    const events = await all((await openSse(url(id, '?after=999999'))).events);
    expect(events).toHaveLength(1);
    expect(events[0]!.event).toBe('failure');
    expect(JSON.parse(events[0]!.data).error).toMatch(/999999/);
  });
});
