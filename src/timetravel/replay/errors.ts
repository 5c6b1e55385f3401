import { crossRealmError, JukeboxError } from '../../errors/JukeboxError';

/** What one diverging step looked like: where on the tape, and what was recorded against what ran now. */
export interface Divergence {
  step: number;
  /** Index of the tape frame the replay disagreed with (the step's llm.request / tool.call, or the outcome). */
  frame: number;
  /** The frame kind, or `end` when the agent did more or fewer steps than the tape holds. */
  kind: string;
  /** Dotted paths of the fields that differ, e.g. `model`, `messages[2].content`. */
  fields: string[];
  expected: unknown;
  actual: unknown;
}

function describe(d: Divergence): string {
  const where = d.kind === 'end' ? `step ${d.step}` : `step ${d.step} (frame ${d.frame}, ${d.kind})`;
  return `${where}: ${d.fields.join(', ') || 'differs'}`;
}

/**
 * The agent's code asked for something other than what the tape recorded. Not retryable: the same code
 * against the same tape diverges the same way. The fix is in the code (or in forking on purpose).
 */
export class ReplayDivergenceError extends JukeboxError {
  readonly divergence: Divergence;
  constructor(file: string, divergence: Divergence) {
    super(
      'REPLAY_DIVERGED',
      `replay of ${file} diverged at ${describe(divergence)}. The current agent code no longer does what the recorded run did; ` +
        'run `jbx replay --json` for expected vs actual, or `jbx fork --at STEP` to explore the new behaviour on purpose.',
      { nonRetryable: true },
    );
    this.divergence = divergence;
  }
}
crossRealmError('ReplayDivergenceError', ReplayDivergenceError);

/** No module named by the project configuration exports an agent with the tape's workflow type. */
export class AgentCodeNotFoundError extends JukeboxError {
  readonly searched: string[];
  readonly found: string[];
  constructor(workflowType: string, searched: string[], found: string[], cause?: unknown) {
    super(
      'AGENT_CODE_NOT_FOUND',
      `no agent named ${JSON.stringify(workflowType)} (the tape header's workflowType) is exported by the configured agent modules ` +
        `(${searched.join(', ') || 'none'}; agents found: ${found.join(', ') || 'none'}). ` +
        'Add the module that defines it to "agents" in jukebox.config.json (or the "jukebox" key of package.json).',
      { cause, nonRetryable: true },
    );
    this.searched = searched;
    this.found = found;
  }
}
crossRealmError('AgentCodeNotFoundError', AgentCodeNotFoundError);

/**
 * Neither the workflow code that recorded a tape (kept by hash beside the tapes) nor the project in the working
 * folder has the tape's agent: the message lists both places and what to pass.
 */
export class ReplayCodeMissingError extends JukeboxError {
  constructor(
    tape: string,
    header: { workflowType: string; agentCodeHash: string },
    looked: { storedDirs: string[]; storedFile?: string; project: ProjectLookup },
    cause?: unknown,
  ) {
    const name = JSON.stringify(header.workflowType);
    const stored = looked.storedFile
      ? `the workflow code that recorded it (${looked.storedFile}) defines no agent named ${name}`
      : `the workflow code that recorded it (${header.agentCodeHash}) is not stored in ${looked.storedDirs.join(' or ')}`;
    const p = looked.project;
    super(
      'REPLAY_CODE_MISSING',
      `no code to replay ${tape} with: ${stored}, and the project here (${p.source}) exports no agent named ${name} ` +
        `(modules: ${p.searched.join(', ') || 'none'}; agents found: ${p.found.join(', ') || 'none'}). ` +
        `Pass --against DIR: a project folder whose jukebox.config.json lists the module exporting ${name} in "agents"; ` +
        'or replay a bundle (`jbx bundle TAPE`) made where the run was recorded, which carries its code.',
      { cause, nonRetryable: true },
    );
  }
}
crossRealmError('ReplayCodeMissingError', ReplayCodeMissingError);

export interface ProjectLookup {
  source: string;
  searched: string[];
  found: string[];
}

/** The project configuration file exists but cannot be used. */
export class ProjectConfigError extends JukeboxError {
  constructor(file: string, problem: string, cause?: unknown) {
    super('PROJECT_CONFIG_INVALID', `${file}: ${problem}`, { cause, nonRetryable: true });
  }
}
crossRealmError('ProjectConfigError', ProjectConfigError);

/** The tape lacks what replay needs (no recorded input, an unreadable step). */
export class TapeNotReplayableError extends JukeboxError {
  constructor(file: string, problem: string, cause?: unknown) {
    super('TAPE_NOT_REPLAYABLE', `${file} cannot be replayed: ${problem}`, { cause, nonRetryable: true });
  }
}
crossRealmError('TapeNotReplayableError', TapeNotReplayableError);

/** `jbx replay --temporal` found no stored workflow history for the tape and could not fetch one. */
export class HistoryMissingError extends JukeboxError {
  constructor(file: string, problem: string, cause?: unknown) {
    super(
      'HISTORY_MISSING',
      `${file} has no workflow history stored beside it (${problem}). Capture it after the run with ` +
        'captureRunHistory(handle, tapeFile), or run `jbx replay --temporal` while the Temporal server that ran it is up.',
      { cause, nonRetryable: true },
    );
  }
}
crossRealmError('HistoryMissingError', HistoryMissingError);

/** A step that failed in the recorded run fails the same way on replay, so the agent's own handling re-runs. */
export class ReplayedStepError extends JukeboxError {
  constructor(step: number, recorded: { name: string; message: string; code?: string }) {
    super(
      recorded.code ?? 'REPLAYED_STEP_FAILED',
      `step ${step} failed in the recorded run: ${recorded.message}`,
      {
        nonRetryable: true,
      },
    );
  }
}
crossRealmError('ReplayedStepError', ReplayedStepError);
