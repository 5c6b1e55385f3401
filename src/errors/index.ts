/**
 * Typed errors with stable codes, shared by every Jukebox module. Their mapping onto Temporal failures is
 * ./applicationFailure, imported where it is used: it loads @temporalio/common, which most callers do not need.
 */
export { crossRealmError, JukeboxError, type JukeboxErrorOptions } from './JukeboxError';
export { hasHiddenCharacters, oneLine, printable, printableJson, quoted } from './printable';
