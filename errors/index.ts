/** Typed errors with stable codes, shared by every Jukebox module. */
export { crossRealmError, JukeboxError, type JukeboxErrorOptions } from './JukeboxError';
