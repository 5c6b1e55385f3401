/**
 * A check, once per process, that Temporal's external storage can encode a claim here. The SDK encodes its
 * ExternalStorageReference with @temporalio/common's protobufjs, on a message type of @temporalio/proto's; when
 * npm installed two copies of protobufjs (an older one, e.g. OpenTelemetry's 7.x, at the top of node_modules),
 * every offloaded payload fails with "type must be a Type" deep in a worker's task handling. This finds it once,
 * at worker start, where the worker can say so and keep payloads in the history as Temporal does without the
 * content store, instead of failing steps one by one.
 */
import { StorageDriverClaim } from '@temporalio/common';
import { encodeReferencePayload } from '@temporalio/common/lib/internal-non-workflow/extstore-helpers';
import { crossRealmError, JukeboxError } from '../../errors';

export class ReferenceEncodingBrokenError extends JukeboxError {
  constructor(cause: unknown) {
    super(
      'CONTENT_REFERENCE_ENCODING_BROKEN',
      `Temporal's external storage cannot encode a payload reference in this install (${(cause as Error)?.message ?? String(cause)}): ` +
        '@temporalio/common and @temporalio/proto load different copies of protobufjs. Add protobufjs 8 to your ' +
        "dependencies (npm install protobufjs@8) so that npm installs one copy for both, or run `npm ci` if this project's lockfile already has it.",
      { cause, nonRetryable: true },
    );
  }
}
crossRealmError('ReferenceEncodingBrokenError', ReferenceEncodingBrokenError);

let checked: ReferenceEncodingBrokenError | null | undefined;

/** The reason this process cannot offload payloads, or null when it can. */
export function referenceEncodingProblem(): ReferenceEncodingBrokenError | null {
  if (checked === undefined) {
    try {
      encodeReferencePayload({
        driverName: 'jukebox',
        claim: new StorageDriverClaim({ hash: '0'.repeat(64) }),
        sizeBytes: 1,
      });
      checked = null;
    } catch (err) {
      checked = new ReferenceEncodingBrokenError(err);
    }
  }
  return checked;
}
