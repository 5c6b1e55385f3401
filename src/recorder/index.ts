/**
 * The flight recorder: records every agent step of a Temporal run onto its `.jbx` tape. It offers the tape
 * store (one tape per run, safe across worker processes), the activity interceptor and recordOutcome activity
 * a worker registers, the hooks the llm and tool steps call, secret redaction, and tape summaries for the CLI.
 */

export {
  type ActivityIdentity,
  ActivityTape,
  currentActivityTape,
  type PriceHook,
} from './activityTape';
export { hashBundleCode, hashWorkflowBundle } from './agentCodeHash';
export {
  ObjectStoreError,
  TapeContentionError,
  TapeLockTimeoutError,
  TapeRecordError,
  TapeSegmentsError,
  TapeStoreConfigError,
} from './errors';
export { isAlive, type LockOptions, withFileLock } from './lock';
export { tapeFileName, tapeIdFor } from './naming';
export { ObjectBucket, type ObjectBucketOptions } from './objectBucket';
export {
  ObjectTapeStore,
  type ObjectTapeStoreOptions,
  SEGMENT_OFFSET_DIGITS,
  segmentKey,
  segmentOffset,
} from './objectStore';
export {
  type Observation,
  RECORD_OUTCOME_ACTIVITY,
  type RecordOutcomeInput,
  type WithObservations,
} from './observations';
export { TapeRecorder, type TapeRecorderOptions } from './recorder';
export {
  DEFAULT_SECRET_PATTERNS,
  REDACTED,
  type RedactionOptions,
  Redactor,
  SECRET_ENV_NAME,
} from './redact';
export {
  DEFAULT_TAPE_DIR,
  FolderTapeStore,
  type RunIdentity,
  type StoreFsyncPolicy,
  type TapeCreateOptions,
  TapeSession,
  TapeStore,
  type TapeStoreOptions,
  tapeDirFromEnv,
} from './store';
export {
  downloadObjectTape,
  isObjectTapeUrl,
  type ObjectStoreConfig,
  objectStoreConfigFromEnv,
  objectTapeStore,
  tapeStoreFromEnv,
} from './storeFromEnv';
export { summarizeTape, type TapeSummary } from './summary';
export { errorValue, toTapeValue } from './tapeValue';
export { RecorderTimings } from './timings';
