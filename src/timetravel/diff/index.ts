/**
 * Two timelines side by side: step alignment that survives inserted and removed steps, per-step field
 * differences and a summary, rendered for the terminal or as one self-contained HTML page.
 */
export { renderDiffHtml } from './htmlView';
export { renderDiffTerminal } from './terminalView';
export {
  alignSteps,
  type DiffRow,
  diffTimelines,
  type FieldDifference,
  type SideSummary,
  type StepView,
  type TimelineDiff,
  viewOf,
} from './timelineDiff';
