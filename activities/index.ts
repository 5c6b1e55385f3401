/** Every activity of a Jukebox worker: all of an agent's I/O lives here, never in workflows. */
export { AfterStepInterceptor, afterStep } from './afterStep';
export {
  type BoothStepInput,
  type CommitActivities,
  createCommitActivities,
  type RollbackReport,
  type StagedSummary,
  type VerifyReport,
} from './commitActivities';
export { FailureMappingInterceptor } from './failureMappingInterceptor';
export {
  createStepActivities,
  type LlmStepInput,
  type StepActivities,
  type StepActivityDeps,
  type ToolStepInput,
} from './stepActivities';
