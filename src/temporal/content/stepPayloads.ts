/**
 * Which payloads are a step's: Temporal's external storage asks the driver's selector about every payload past
 * the threshold (activity inputs and results, but also memos, query answers, a run's input and result), and
 * tells it nothing of where the payload goes. Jukebox moves step payloads from the small threshold on (they are
 * what grows with a conversation) and anything else only from the large one, so memos that people read in the
 * Web UI and listings stay readable. A step's input is recognized by its first field (every Jukebox activity
 * input starts with `step`, a continue-as-new input's options with `continued`); a step's result is remembered
 * by the worker's activity interceptor when the activity returns it, before the SDK encodes it.
 */
import type { Payload } from '@temporalio/common';

const STEP_INPUT = new TextEncoder().encode('{"step":');
// The run options a segment hands the next one (src/temporal/workflow/continuation.ts): every step so far.
const CONTINUED_RUN = new TextEncoder().encode('{"continued":');
const decoder = new TextDecoder();

function startsWith(data: Uint8Array, prefix: Uint8Array): boolean {
  if (data.byteLength < prefix.byteLength) return false;
  for (let i = 0; i < prefix.byteLength; i++) if (data[i] !== prefix[i]) return false;
  return true;
}

export class StepPayloads {
  // The JSON texts of recent step results, newest last; bounded, so a result never claimed is forgotten.
  private readonly results = new Set<string>();

  constructor(
    /** Results from this length (characters) are remembered; smaller ones stay in the history anyway. */
    private readonly minChars: number,
    /** Results from this length go to the store whatever they are; no need to remember them. */
    private readonly maxChars: number,
    private readonly capacity = 512,
    /**
     * Called with a remembered result's JSON text as the activity returns it: the driver starts storing it
     * then, so its disk wait runs alongside the tape's closing fsync instead of after it.
     */
    private readonly onResult?: (text: string) => void,
  ) {}

  /** Called with an activity's result as it returns, before the SDK encodes it. */
  rememberResult(value: unknown): void {
    if (value === undefined) return;
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch {
      return; // the SDK's converter fails the activity with its own message
    }
    if (text === undefined || text.length < this.minChars || text.length >= this.maxChars) return;
    this.results.delete(text);
    this.results.add(text);
    if (this.results.size > this.capacity) this.results.delete(this.results.values().next().value as string);
    this.onResult?.(text);
  }

  /** Whether `payload` is a step's input or a result this worker's activities returned. */
  isStep(payload: Payload): boolean {
    const data = payload.data;
    if (!data) return false;
    if (startsWith(data, STEP_INPUT) || startsWith(data, CONTINUED_RUN)) return true;
    return this.results.has(decoder.decode(data));
  }
}
