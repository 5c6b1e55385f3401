/**
 * `jukebox/testing`: for an application's own tests. The scripted model server (real HTTP speaking the
 * OpenAI and Anthropic wire formats, no key, no network) and offline replay of recorded tapes: a test runs
 * its agent against a tape and fails on any divergence, with no Temporal server and no model API; `replayTapes`
 * runs a folder of recorded tapes as a regression suite (what `jbx replay DIR` does).
 */

export {
  junitXml,
  type ReplayOptions,
  type ReplayReport,
  type ReplayTapesOptions,
  readTimeline,
  replayTape,
  replayTapes,
  type SuiteReport,
  type TapeReplayResult,
  type Timeline,
} from '../timetravel/replay';
export * from './modelserver';
