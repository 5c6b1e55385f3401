/**
 * One-file bug reports: a recorded run's tape, its Temporal history and the workflow code that recorded it
 * (by the tape's agentCodeHash) in one hashed `.jbxb` file (src/timetravel/bundle/BUNDLE.md), replayable offline and by
 * Temporal's replayer on a machine with neither the agent's source nor a server.
 */
export { agentFromWorkflowCode, agentsOfWorkflowCode } from './bundledAgent';
export { CODE_FOLDER, codeDirFor, findWorkflowCode, storeWorkflowCode } from './codeStore';
export { type BundleInput, buildBundle, type WrittenBundle, writeBundle } from './createBundle';
export {
  BundleCorruptError,
  BundleError,
  BundleInputError,
  BundleMagicError,
  BundleTruncatedError,
  BundleVersionError,
  WorkflowCodeMissingError,
} from './errors';
export {
  BUNDLE_MAGIC,
  BUNDLE_VERSION,
  type BundlePart,
  type DecodedPart,
  decodeBundle,
  encodeBundle,
  isBundleFile,
  looksLikeBundle,
  type PartKind,
} from './format';
export { type BundleManifest, MANIFEST_FORMAT, type ManifestPart } from './manifest';
export { type OpenedBundle, openBundle } from './openBundle';
