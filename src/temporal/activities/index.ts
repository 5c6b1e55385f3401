/** Every activity of a Jukebox worker: all of an agent's I/O lives here, never in workflows. */
export { AfterStepInterceptor, afterStep } from '../worker/afterStep';
export { FailureMappingInterceptor } from '../worker/failureMappingInterceptor';
export {
  type BoothStepInput,
  type CommitActivities,
  createCommitActivities,
  type RollbackReport,
  type StagedSummary,
  type VerifyReport,
} from './commitActivities';
export {
  createStepActivities,
  type LlmStepInput,
  type StepActivities,
  type StepActivityDeps,
  type ToolStepInput,
} from './stepActivities';
