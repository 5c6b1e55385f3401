import { crossRealmError, JukeboxError } from '../../errors';

/** Where in a tape something went wrong; every tape error carries it so a message can point at the bytes. */
export interface TapeLocation {
  /** The file path, or `<bytes>` when the tape was handed over as a buffer. */
  file: string;
  /** Index of the frame at fault, or `null` when the fault is in the file header. */
  frameIndex: number | null;
  /** Byte offset of the frame (or header field) at fault. */
  offset: number;
  /** How many frames before the fault verified, i.e. what `readTape(..., { recover: true })` still returns. */
  recoverableFrames: number;
}

function where(loc: TapeLocation): string {
  const at =
    loc.frameIndex === null
      ? `header at byte ${loc.offset}`
      : `frame ${loc.frameIndex} at byte ${loc.offset}`;
  return `tape ${loc.file}: ${at}`;
}

function salvage(loc: TapeLocation): string {
  if (loc.frameIndex === null) return 'nothing in this file can be read';
  if (loc.recoverableFrames === 0) return 'no frame before it verified, so only the header can still be read';
  return `frames 0..${loc.recoverableFrames - 1} (bytes before ${loc.offset}) verified and can still be read with readTape(..., { recover: true })`;
}

/** Base of the tape errors: exposes the location fields so callers need not parse messages. */
export abstract class TapeError extends JukeboxError implements TapeLocation {
  readonly file: string;
  readonly frameIndex: number | null;
  readonly offset: number;
  readonly recoverableFrames: number;
  /** A short stable tag for the exact check that failed (e.g. `payload-hash`, `chain`); finer than `code`. */
  readonly reason: string;

  constructor(
    code: string,
    reason: string,
    detail: string,
    loc: TapeLocation,
    cause?: unknown,
    readable?: string,
  ) {
    super(code, `${where(loc)}: ${detail}; ${readable ?? salvage(loc)}`, { cause, nonRetryable: true });
    this.file = loc.file;
    this.frameIndex = loc.frameIndex;
    this.offset = loc.offset;
    this.recoverableFrames = loc.recoverableFrames;
    this.reason = reason;
  }
}
crossRealmError('TapeError', TapeError as never);

/** Too few bytes: the file ends inside the header. (A file ending inside a frame is a torn tail, not an error.) */
export class TapeTruncatedError extends TapeError {
  constructor(detail: string, loc: TapeLocation) {
    super('TAPE_TRUNCATED', 'truncated', detail, loc);
  }
}
crossRealmError('TapeTruncatedError', TapeTruncatedError);

/** Bytes that cannot be what a writer produced: a hash or chain mismatch, a bad field, a malformed payload. */
export class TapeCorruptError extends TapeError {
  constructor(reason: string, detail: string, loc: TapeLocation, cause?: unknown) {
    super('TAPE_CORRUPT', reason, detail, loc, cause);
  }
}
crossRealmError('TapeCorruptError', TapeCorruptError);

/** The file is a Jukebox tape, but of a format version this reader does not know. */
/** `1`, `1 and 2`, `1, 2 and 3`. */
function listed(versions: readonly number[]): string {
  return versions.length < 2
    ? versions.join('')
    : `${versions.slice(0, -1).join(', ')} and ${versions.at(-1)}`;
}

export class TapeVersionError extends TapeError {
  readonly version: number;
  constructor(version: number, supported: readonly number[], loc: TapeLocation) {
    super(
      'TAPE_VERSION',
      'version',
      `format version ${version} is not supported (this reader knows ${listed(supported)}); a newer Jukebox may read it`,
      loc,
    );
    this.version = version;
  }
}
crossRealmError('TapeVersionError', TapeVersionError);

/** The file does not start with the tape magic: it is not a Jukebox tape at all. */
export class TapeMagicError extends TapeError {
  constructor(detail: string, loc: TapeLocation) {
    super('TAPE_MAGIC', 'magic', detail, loc);
  }
}
crossRealmError('TapeMagicError', TapeMagicError);

/** A size or shape exceeds the decode limits; raise the limit only for tapes you trust. */
export class TapeLimitError extends TapeError {
  readonly limit: string;
  constructor(limit: string, detail: string, loc: TapeLocation) {
    super('TAPE_LIMIT', `limit:${limit}`, detail, loc);
    this.limit = limit;
  }
}
crossRealmError('TapeLimitError', TapeLimitError);

/** Appending to a tape that already carries a seal: a sealed tape is final, fork it instead. */
export class TapeSealedError extends TapeError {
  constructor(detail: string, loc: TapeLocation) {
    super(
      'TAPE_SEALED',
      'sealed',
      detail,
      loc,
      undefined,
      `all ${loc.recoverableFrames} frames are intact and readable`,
    );
  }
}
crossRealmError('TapeSealedError', TapeSealedError);

/** A caller asked the writer for something the format forbids (bad kind, unencodable payload, closed writer). */
export class TapeUsageError extends JukeboxError {
  constructor(message: string, cause?: unknown) {
    super('TAPE_USAGE', message, { cause, nonRetryable: true });
  }
}
crossRealmError('TapeUsageError', TapeUsageError);

/**
 * The writer can take no more frames: it was closed, or a write or fsync of it failed. The tape itself is intact
 * up to its last whole frame, and a new writer (TapeWriter.reopen, which the tape store does on the next append)
 * continues it, so the step that met this may be retried.
 */
export class TapeWriterUnavailableError extends JukeboxError {
  constructor(message: string, cause?: unknown) {
    super('TAPE_WRITER_UNAVAILABLE', message, { cause, nonRetryable: false });
  }
}
crossRealmError('TapeWriterUnavailableError', TapeWriterUnavailableError);
