import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forkRun, loadRunHistory, loadStoredHistory, sidecarPath, storeHistory } from '../../../src/temporal';
import { type StepEvents, stepAtEvent } from '../../../src/timetravel/fork';
import { readTimeline } from '../../../src/timetravel/replay';
import { runJbx } from '../replay/jbx';
import { QUESTION, recordingSetup, SAMPLE_SCRIPT } from '../replay/recordedRun';

describe('forking at a Temporal history event', () => {
  let setup: Awaited<ReturnType<typeof recordingSetup>>;
  let tape: string;
  let workflowId: string;
  let steps: StepEvents[];

  beforeAll(async () => {
    setup = await recordingSetup();
    const r = await setup.record({ question: QUESTION });
    tape = r.tapeFile;
    workflowId = r.handle.workflowId;
    steps = (await loadRunHistory({ tapeFile: tape, tapeDir: setup.tapeDir })).alignment.steps;
  });
  afterAll(async () => {
    await setup?.close();
  });

  const jbx = (...args: string[]) =>
    runJbx(args, { env: { JUKEBOX_TAPE_DIR: setup.tapeDir, JUKEBOX_TASK_QUEUE: setup.env.taskQueue } });

  it('jbx show --events gives each step the ids of its activity events, in history order', async () => {
    const r = await jbx('show', tape, '--events', '--json');
    expect(r.code, r.stderr).toBe(0);
    const shown = JSON.parse(r.stdout) as { steps: StepEvents[]; eventCount: number };
    expect(shown.steps).toEqual(steps);
    expect(steps.map((s) => s.kind)).toEqual(['llm', 'tool', 'llm', 'tool', 'llm', 'tool', 'llm']);
    for (const s of steps) {
      expect(s.events.map((e) => e.type)).toEqual([
        'ActivityTaskScheduled',
        'ActivityTaskStarted',
        'ActivityTaskCompleted',
      ]);
      expect(s.events[0]!.activityType).toBe(s.kind === 'llm' ? 'llmStep' : 'toolStep');
      expect(s.events[1]!.attempt).toBe(1);
    }
    for (let i = 1; i < steps.length; i++) expect(steps[i]!.first!).toBeGreaterThan(steps[i - 1]!.last!);
    const human = await jbx('show', tape, '--events');
    expect(human.stdout).toMatch(
      new RegExp(
        `step +4 +llm +activity ${steps[4]!.activityId} +events ${steps[4]!.first}\\.\\.${steps[4]!.last}: ${steps[4]!.first} ActivityTaskScheduled`,
      ),
    );
  });

  it('forkRun({ workflowId, eventId }) at an event inside step 4 forks at that step, like --at 4', async () => {
    const startedEvent = steps[4]!.events.find((e) => e.type === 'ActivityTaskStarted')!;
    setup.model.loadScript(SAMPLE_SCRIPT);
    const f = await forkRun({
      workflowId,
      eventId: startedEvent.id,
      overrides: { model: 'gpt-4o' },
      connection: setup.env.connection,
      namespace: setup.env.namespace,
      taskQueue: setup.env.taskQueue,
      tapeDir: setup.tapeDir,
    });
    expect(f.error).toBeUndefined();
    expect(f.point).toMatchObject({
      eventId: startedEvent.id,
      eventType: 'ActivityTaskStarted',
      step: 4,
      inside: true,
    });
    expect(f.point!.note).toContain(`inside step 4 (events ${steps[4]!.first}..${steps[4]!.last})`);
    expect(f.fork.forkStep).toBe(4);
    // Steps 4 and 6 ran live (two model requests); 0..3 came from the tape.
    expect(setup.model.requestCount()).toBe(2);
    const t = readTimeline(f.tapeFile);
    expect(t.tape.header.parent?.forkStep).toBe(4);
    expect(t.steps.map((s) => s.request?.model ?? null)).toEqual([
      'gpt-4o-mini',
      null,
      'gpt-4o-mini',
      null,
      'gpt-4o',
      null,
      'gpt-4o',
    ]);
  });

  it('an event between two steps forks at the next one; jbx fork --workflow-id --event says which', async () => {
    const run = await loadRunHistory({ tapeFile: tape, tapeDir: setup.tapeDir });
    const between = run.alignment.events.find((e) => e.id > steps[1]!.last! && e.id < steps[2]!.first!)!;
    expect(between.type).toMatch(/^WorkflowTask/);
    expect(stepAtEvent(run.alignment, between.id, tape)).toMatchObject({ step: 2, inside: false });
    expect(stepAtEvent(run.alignment, 1, tape)).toMatchObject({
      step: 0,
      eventType: 'WorkflowExecutionStarted',
    });
    expect(stepAtEvent(run.alignment, run.alignment.lastEventId, tape)).toMatchObject({
      step: 7,
      inside: false,
    });

    setup.model.loadScript(SAMPLE_SCRIPT);
    const r = await jbx(
      'fork',
      '--workflow-id',
      workflowId,
      '--event',
      String(between.id),
      '--skip-code-check',
      '--json',
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`event ${between.id} (${between.type}) comes before step 2`);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({
      status: 'completed',
      fork: { forkStep: 2 },
      event: { step: 2, inside: false },
    });
    expect(setup.model.requestCount()).toBe(3); // steps 2, 4, 6
  });

  it("without a stored history, takes the server's and stores it beside the tape", async () => {
    const other = await setup.record({ question: QUESTION });
    rmSync(sidecarPath(other.tapeFile));
    const r = await jbx('show', other.tapeFile, '--events', '--json');
    expect(r.code, r.stderr).toBe(0);
    const shown = JSON.parse(r.stdout) as { historySource: string; steps: StepEvents[] };
    expect(shown.historySource).toContain('the Temporal server');
    expect(shown.steps.map((s) => s.events.length)).toEqual([3, 3, 3, 3, 3, 3, 3]);
    expect(existsSync(sidecarPath(other.tapeFile))).toBe(true);
    const again = JSON.parse((await jbx('show', other.tapeFile, '--events', '--json')).stdout);
    expect(again.historySource).not.toContain('the Temporal server');
    expect(again.steps).toEqual(shown.steps);
  });

  it('bad input: a missing event, an unknown workflow, a history of another run', async () => {
    const missing = await jbx('fork', '--workflow-id', workflowId, '--event', '99999');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(
      /has events 1\.\.\d+; there is no event 99999\. Pass --event with one of those ids/,
    );

    const unknown = await jbx('fork', '--workflow-id', 'no-such-workflow-anywhere', '--event', '5');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown workflow "no-such-workflow-anywhere"');
    expect(unknown.stderr).toContain('jbx ls');

    const usage = await jbx('fork', '--workflow-id', workflowId);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('add --event N');

    // A second run's history stored beside a copy of the first tape, under the first run's ids.
    const other = await setup.record({ question: QUESTION });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'jbx-mismatch-'));
    const copy = path.join(dir, path.basename(tape));
    copyFileSync(tape, copy);
    const h = readTimeline(tape).tape.header;
    await storeHistory(copy, loadStoredHistory(other.tapeFile).history, {
      workflowId: h.workflowId,
      runId: h.runId,
    });
    const shown = await jbx('show', copy, '--events');
    expect(shown.code).toBe(1);
    expect(shown.stderr).toContain(`does not belong to the tape ${copy}: the history is of run`);
    expect(shown.stderr).toContain('Pass the workflow id and run id of the run that recorded the tape');
    const forked = await jbx('fork', copy, '--event', '5');
    expect(forked.code).toBe(1);
    expect(forked.stderr).toContain('does not belong to the tape');
  });
});
