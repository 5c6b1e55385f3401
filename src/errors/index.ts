/** Typed errors with stable codes, shared by every Jukebox module, and their mapping onto Temporal failures. */
export { toApplicationFailure } from './applicationFailure';
export { crossRealmError, JukeboxError, type JukeboxErrorOptions } from './JukeboxError';
export { hasHiddenCharacters, oneLine, printable, printableJson, quoted } from './printable';
