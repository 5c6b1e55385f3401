/** Every activity of a Jukebox worker: all of an agent's I/O lives here, never in workflows. */
export {
  type ApprovalActivities,
  createApprovalActivities,
} from './approvalActivities';
export {
  type BoothStepInput,
  type CommitActivities,
  createCommitActivities,
  type VerifyReport,
} from './commitActivities';
export {
  createStepActivities,
  type LlmStepInput,
  type StepActivities,
  type StepActivityDeps,
  type ToolStepInput,
} from './stepActivities';
