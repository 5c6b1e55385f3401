import { crossRealmError, JukeboxError } from '../errors';

/** A server-sent event stream from a model API that cannot be parsed: the answer is unusable as recorded. */
export class MalformedSseError extends JukeboxError {
  constructor(
    readonly source: string,
    readonly problem: string,
  ) {
    super(
      'INTEGRATION_MALFORMED_SSE',
      `The event stream from ${source} is malformed: ${problem}. The model API (or whatever sits in front of it) ` +
        'sent something that is not OpenAI/Anthropic SSE; check the upstream URL and that it speaks the chat API.',
      { nonRetryable: false },
    );
  }
}
crossRealmError('MalformedSseError', MalformedSseError);

/** A replayed request has no recorded answer on the tape: the code now asks something the run never asked. */
export class ReplayUnmatchedError extends JukeboxError {
  constructor(
    readonly tape: string,
    readonly request: Record<string, unknown>,
    detail: string,
  ) {
    super(
      'REPLAY_UNMATCHED',
      `Tape ${tape} has no recorded answer for request ${JSON.stringify(request)}: ${detail}. Replay matches ` +
        'requests by their canonical content (provider, model, system, messages, tools, temperature, max tokens, ' +
        'stream), in recording order; re-record the tape if the code or prompts changed.',
      { nonRetryable: true },
    );
  }
}
crossRealmError('ReplayUnmatchedError', ReplayUnmatchedError);

/** A replay source that is not a readable tape of recorded model calls. */
export class ReplayTapeError extends JukeboxError {
  constructor(tape: string, problem: string, cause?: unknown) {
    super(
      'REPLAY_TAPE_UNUSABLE',
      `Cannot replay from ${tape}: ${problem}. Pass a .jbx tape recorded by a wrapped client or by jbx proxy ` +
        '(check it with `jbx verify`).',
      { cause, nonRetryable: true },
    );
  }
}
crossRealmError('ReplayTapeError', ReplayTapeError);

/** A request to a model route whose body is not a JSON object. */
export class WireRequestError extends JukeboxError {
  constructor(route: string, problem: string) {
    super(
      'INTEGRATION_BAD_REQUEST',
      `The request to ${route} cannot be recorded or replayed: ${problem}. Send a JSON object body as the ` +
        'OpenAI / Anthropic APIs expect.',
      { nonRetryable: true },
    );
  }
}
crossRealmError('WireRequestError', WireRequestError);
