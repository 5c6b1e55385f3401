/**
 * A run's items as the AI SDK's UI message stream (`ai` 6: the chunks `useChat`, `readUIMessageStream` and
 * `createUIMessageStreamResponse` consume), so a page built on the AI SDK shows a Jukebox run like a
 * `streamText` answer: model tokens as text parts, tool steps as tool parts, and what the AI SDK has no part
 * for (staged effects, commits, rollbacks, approvals, retries, the outcome) as `data-jukebox-*` parts.
 *
 * The chunk types are declared here, structurally equal to the AI SDK's `UIMessageChunk` members they use, so
 * Jukebox needs no runtime dependency on `ai` (a test checks they are assignable to `ai`'s own).
 */
import { type FollowRunOptions, followRun } from './followRun';
import type { RunItem } from './items';

export type JukeboxDataPart = {
  type: `data-jukebox-${string}`;
  id?: string;
  data: unknown;
};

export type JukeboxUIMessageChunk =
  | { type: 'start'; messageId?: string }
  | { type: 'start-step' }
  | { type: 'finish-step' }
  | { type: 'text-start'; id: string }
  | { type: 'text-delta'; id: string; delta: string }
  | { type: 'text-end'; id: string }
  | { type: 'tool-input-available'; toolCallId: string; toolName: string; input: unknown; dynamic: true }
  | { type: 'tool-output-available'; toolCallId: string; output: unknown; dynamic: true }
  | { type: 'tool-output-error'; toolCallId: string; errorText: string; dynamic: true }
  | { type: 'error'; errorText: string }
  | { type: 'finish'; finishReason?: 'stop' | 'error' | 'other' }
  | JukeboxDataPart;

/**
 * Turns items into chunks, keeping which text part is open. A text part is one attempt of one model step
 * (`s<step>a<attempt>`, with the segment's run id for a later segment); a retried step closes the superseded
 * attempt's part and says so in a `data-jukebox-retry` part naming it, since the AI SDK cannot take text back.
 */
export class UIMessageChunker {
  private open: string | undefined;
  private stepOpen = false;

  private textId(item: RunItem): string {
    return `s${item.step}a${item.attempt ?? 1}${item.runId ? `-${item.runId}` : ''}`;
  }

  private closeText(out: JukeboxUIMessageChunk[]): void {
    if (this.open) out.push({ type: 'text-end', id: this.open });
    this.open = undefined;
  }

  private data(item: RunItem, name: string): JukeboxDataPart {
    return { type: `data-jukebox-${name}`, id: `p${item.position}`, data: item };
  }

  chunks(item: RunItem): JukeboxUIMessageChunk[] {
    const out: JukeboxUIMessageChunk[] = [];
    switch (item.kind) {
      case 'step':
        if (item.retryOf !== undefined) {
          const superseded = `s${item.step}a${item.retryOf}${item.runId ? `-${item.runId}` : ''}`;
          if (this.open === superseded) this.closeText(out);
          out.push({ ...this.data(item, 'retry'), data: { ...item, supersededTextId: superseded } });
        }
        break;
      case 'token': {
        if (item.text === '') break;
        const id = this.textId(item);
        if (this.open !== id) {
          this.closeText(out);
          out.push({ type: 'text-start', id });
          this.open = id;
        }
        out.push({ type: 'text-delta', id, delta: item.text });
        break;
      }
      case 'response':
        this.closeText(out);
        break;
      case 'tool.call':
        out.push({
          type: 'tool-input-available',
          toolCallId: item.callId,
          toolName: item.toolName,
          input: item.args,
          dynamic: true,
        });
        break;
      case 'tool.result':
        if (item.isError)
          out.push({
            type: 'tool-output-error',
            toolCallId: item.callId,
            errorText:
              typeof (item.error as { message?: unknown })?.message === 'string'
                ? String((item.error as { message: string }).message)
                : JSON.stringify(item.error),
            dynamic: true,
          });
        else
          out.push({
            type: 'tool-output-available',
            toolCallId: item.callId,
            output: item.output,
            dynamic: true,
          });
        break;
      case 'staged':
        out.push(this.data(item, 'staged'));
        break;
      case 'commit':
      case 'rollback':
      case 'approval':
      case 'segment':
      case 'fork':
        out.push(this.data(item, item.kind));
        break;
      case 'breaker.trip':
        out.push(this.data(item, 'breaker'));
        break;
      case 'outcome':
        this.closeText(out);
        if (this.stepOpen) out.push({ type: 'finish-step' });
        this.stepOpen = false;
        out.push(this.data(item, 'outcome'));
        if (item.status !== 'completed')
          out.push({
            type: 'error',
            errorText: `the run ended ${item.status}: ${JSON.stringify(item.error ?? null)}`,
          });
        out.push({ type: 'finish', finishReason: item.status === 'completed' ? 'stop' : 'error' });
        break;
      case 'request':
        // An AI SDK step is a model call and the tool steps it asked for: a new model request starts the next.
        if (this.stepOpen) out.push({ type: 'finish-step' }, { type: 'start-step' });
        else {
          out.push({ type: 'start-step' });
          this.stepOpen = true;
        }
        break;
    }
    return out;
  }
}

/**
 * The run as an AI SDK UI message stream: `start`, then the chunks of every item as it is recorded, then
 * `finish` when the run's tape is sealed. `after` resumes after an item's position like followRun (the chunk
 * stream then starts inside the message, without `start`).
 */
export function followRunAsUIMessageStream(
  workflowId: string,
  options: FollowRunOptions = {},
): ReadableStream<JukeboxUIMessageChunk> {
  const iterator = followRun(workflowId, options)[Symbol.asyncIterator]();
  const chunker = new UIMessageChunker();
  let started = options.after !== undefined && options.after >= 0;
  return new ReadableStream<JukeboxUIMessageChunk>({
    async pull(controller) {
      if (!started) {
        started = true;
        controller.enqueue({ type: 'start', messageId: workflowId });
        return;
      }
      for (;;) {
        const next = await iterator.next();
        if (next.done) return controller.close();
        const chunks = chunker.chunks(next.value);
        if (chunks.length === 0) continue;
        for (const c of chunks) controller.enqueue(c);
        return;
      }
    },
    async cancel() {
      await iterator.return?.();
    },
  });
}
