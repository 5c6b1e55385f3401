/**
 * Every `jbx` command, declared in one place. A command's module is loaded only when that command runs (help
 * loads none), so a quick command such as `jbx ls` does not pay for the Temporal worker, OpenTelemetry
 * and model clients that other commands import.
 */
import type { CommandSpec } from './command';

export interface CommandEntry {
  name: string;
  /** One line for `jbx --help`, here so that help loads no command module. */
  summary: string;
  load(): CommandSpec;
}

export const commands: CommandEntry[] = [
  {
    name: 'init',
    summary:
      'scaffold a runnable project: an agent with one tool, workflows, worker, client and a replay test',
    load: () => (require('./init') as typeof import('./init')).initCommand,
  },
  {
    name: 'server',
    summary: 'check that the configured Temporal server answers and knows the namespace',
    load: () => (require('./server') as typeof import('./server')).serverCommand,
  },
  {
    name: 'ls',
    summary: 'list the recorded runs (tapes) in a folder, filtered by outcome, start, workflow; sorted',
    load: () => (require('./ls') as typeof import('./ls')).lsCommand,
  },
  {
    name: 'show',
    summary: 'print the frames of a tape, blobs resolved (one step or frame in full with --step / --frame)',
    load: () => (require('./show') as typeof import('./show')).showCommand,
  },
  {
    name: 'verify',
    summary: 'check every hash and the chain of a tape or a .jbxb bundle; exit 3 if it is damaged',
    load: () => (require('./verify') as typeof import('./verify')).verifyCommand,
  },
  {
    name: 'proxy',
    summary:
      'OpenAI/Anthropic-compatible recording proxy (one tape per session); --replay serves a tape offline',
    load: () => (require('./proxy') as typeof import('./proxy')).proxyCommand,
  },
  {
    name: 'export',
    summary: 'a tape as OpenTelemetry GenAI spans and metrics: post them over OTLP or print the OTLP JSON',
    load: () => (require('./export') as typeof import('./export')).exportCommand,
  },
  {
    name: 'replay',
    summary:
      'replay a tape offline against the current agent code (divergence audit), or a .jbxb with its own; --temporal: determinism check',
    load: () => (require('./replay') as typeof import('./replay')).replayCommand,
  },
  {
    name: 'fork',
    summary:
      'fork a recorded run at a step: earlier steps from the tape, later ones live with a new model/prompt',
    load: () => (require('./fork') as typeof import('./fork')).forkCommand,
  },
  {
    name: 'experiment',
    summary:
      'what-if: fork every run in a folder at its first model step with a change, commit nothing, report what changed',
    load: () => (require('./experiment') as typeof import('./experiment')).experimentCommand,
  },
  {
    name: 'diff',
    summary:
      'compare two tapes step by step (a run and its fork): first divergence, per-step changes, summary',
    load: () => (require('./diff') as typeof import('./diff')).diffCommand,
  },
  {
    name: 'view',
    summary:
      'browse tapes in a local web app: runs, timelines, conversations, stream playback, side-by-side diff',
    load: () => (require('./view') as typeof import('./view')).viewCommand,
  },
  {
    name: 'bundle',
    summary:
      'pack a tape, its Temporal history and the workflow code that recorded it into one .jbxb bug report',
    load: () => (require('./bundle') as typeof import('./bundle')).bundleCommand,
  },
  {
    name: 'approvals',
    summary: 'list the runs waiting for a person: what asks, why, what is staged, how long they wait',
    load: () => (require('./approvals') as typeof import('./approvals')).approvalsCommand,
  },
  {
    name: 'approve',
    summary: 'approve what a run waits for (--args: the edited arguments of a tool or MCP call)',
    load: () => (require('./approve') as typeof import('./approve')).approveCommand,
  },
  {
    name: 'reject',
    summary: "reject what a run waits for; the run's staged changes are rolled back",
    load: () => (require('./reject') as typeof import('./reject')).rejectCommand,
  },
];
