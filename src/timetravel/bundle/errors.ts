import { crossRealmError, JukeboxError } from '../../errors/JukeboxError';

/** Base of the errors reading a `.jbxb` bundle: the file is not a sound bundle. */
export class BundleError extends JukeboxError {
  constructor(
    code: string,
    readonly file: string,
    message: string,
    cause?: unknown,
  ) {
    super(code, `bundle ${file}: ${message}`, { cause, nonRetryable: true });
  }
}
crossRealmError('BundleError', BundleError);

/** The first bytes are not the bundle magic: not a bundle at all. */
export class BundleMagicError extends BundleError {
  constructor(file: string) {
    super(
      'BUNDLE_MAGIC',
      file,
      'not a Jukebox bundle (no JBXBNDL magic); `jbx bundle TAPE -o FILE` makes one',
    );
  }
}
crossRealmError('BundleMagicError', BundleMagicError);

export class BundleVersionError extends BundleError {
  constructor(
    file: string,
    readonly version: number,
  ) {
    super(
      'BUNDLE_VERSION',
      file,
      `format version ${version}, which this jbx cannot read (it reads 1); upgrade jbx`,
    );
  }
}
crossRealmError('BundleVersionError', BundleVersionError);

/** Too few bytes: the file ends inside a structure (a cut download or copy). */
export class BundleTruncatedError extends BundleError {
  constructor(file: string, where: string, offset: number) {
    super(
      'BUNDLE_TRUNCATED',
      file,
      `the file ends inside ${where} (at byte ${offset}); it was cut short: copy or download it again`,
    );
  }
}
crossRealmError('BundleTruncatedError', BundleTruncatedError);

/** Invalid bytes: a hash that does not match, a field out of range, a manifest that disagrees with the parts. */
export class BundleCorruptError extends BundleError {
  constructor(
    file: string,
    readonly reason: string,
    detail: string,
    cause?: unknown,
  ) {
    super('BUNDLE_CORRUPT', file, `${detail}; the bundle was altered or damaged: ask for it again`, cause);
  }
}
crossRealmError('BundleCorruptError', BundleCorruptError);

/** `jbx bundle` cannot find the workflow code that recorded the tape. */
export class WorkflowCodeMissingError extends JukeboxError {
  constructor(tapeFile: string, agentCodeHash: string, looked: string[], current: string | null) {
    super(
      'BUNDLE_CODE_MISSING',
      `the workflow code that recorded ${tapeFile} (agentCodeHash ${agentCodeHash}) is not in ${looked.join(', ') || 'any code folder'}` +
        (current ? `, and the project's workflows bundle to ${current} now` : '') +
        ". Run `jbx bundle` where the recording worker kept its code (the tape folder's code/, or --code-dir), or check out the commit that recorded the run and pass --project",
      { nonRetryable: true },
    );
  }
}
crossRealmError('WorkflowCodeMissingError', WorkflowCodeMissingError);

/** buildBundle was given parts that do not belong together (code or history of another run). */
export class BundleInputError extends JukeboxError {
  constructor(tapeFile: string, problem: string) {
    super('BUNDLE_INPUT', `cannot bundle ${tapeFile}: ${problem}`, { nonRetryable: true });
  }
}
crossRealmError('BundleInputError', BundleInputError);
