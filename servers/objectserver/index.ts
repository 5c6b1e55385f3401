/**
 * A real S3-compatible object store for tests and scripts: the Versity S3 Gateway (versitygw), built from the
 * Go module proxy at a pinned release and run on 127.0.0.1, for the object tape store (src/recorder/objectStore.ts).
 */
export { ObjectServerError } from './errors';
export { ensureVersitygw, VERSITYGW_PACKAGE, VERSITYGW_VERSION } from './install';
export {
  DEFAULT_S3_PORT,
  DEFAULT_TEST_BUCKET,
  type ObjectServerHandle,
  objectServerFiles,
  objectServerPortFromEnv,
  startObjectServer,
  stopObjectServer,
  TEST_S3_CREDENTIALS,
} from './server';
