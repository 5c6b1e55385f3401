/**
 * The few S3 operations the object tape store needs, on any S3-compatible server (AWS S3, MinIO, SeaweedFS, versitygw):
 * create-if-absent (`If-None-Match: *`, the store's only concurrency primitive), get, and ordered listing.
 */
import type { ListObjectsV2CommandOutput, S3Client } from '@aws-sdk/client-s3';
import { requireOptional } from '../errors/optionalDependency';
import { ObjectStoreError } from './errors';

type S3 = typeof import('@aws-sdk/client-s3');

export interface ObjectBucketOptions {
  /** `http(s)://host:port` of an S3-compatible server; unset means AWS S3 of `region`. */
  endpoint?: string;
  bucket: string;
  region?: string;
  /** Default: the SDK's credential chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, profiles, roles). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

/** What a conditional create found: the object is now ours, or someone else's already stood there. */
export type PutIfAbsentResult = 'created' | 'exists';

export class ObjectBucket {
  readonly bucket: string;
  readonly endpoint: string;
  private readonly client: S3Client;
  private readonly s3: S3;

  constructor(options: ObjectBucketOptions) {
    // An optional peer: only workers that record into an object store load the S3 client.
    const s3 = requireOptional<S3>('@aws-sdk/client-s3', 'The S3 tape store (JUKEBOX_TAPE_STORE=s3://...)');
    const { S3Client } = s3;
    this.s3 = s3;
    this.bucket = options.bucket;
    this.endpoint = options.endpoint ?? `https://s3.${options.region ?? 'us-east-1'}.amazonaws.com`;
    this.client = new S3Client({
      region: options.region ?? 'us-east-1',
      ...(options.endpoint ? { endpoint: options.endpoint, forcePathStyle: true } : {}),
      ...(options.credentials ? { credentials: options.credentials } : {}),
      // Checksums on every PUT are the SDK's default since 3.729; not every S3-compatible server accepts the
      // trailing-checksum encoding, and each tape frame carries its own BLAKE3 anyway.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  url(key = ''): string {
    return `s3://${this.bucket}/${key}`;
  }

  /** Creates the bucket; one that already exists (and is ours) is fine. */
  async createBucket(): Promise<void> {
    try {
      await this.client.send(new this.s3.CreateBucketCommand({ Bucket: this.bucket }));
    } catch (err) {
      const name = (err as { name?: string }).name;
      if (name === 'BucketAlreadyOwnedByYou' || name === 'BucketAlreadyExists') return;
      throw this.failure('create the bucket', '', err);
    }
  }

  /** Writes `key` only if no object has that key: of two writers racing for one key, exactly one wins. */
  async putIfAbsent(key: string, bytes: Uint8Array): Promise<PutIfAbsentResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.client.send(
          new this.s3.PutObjectCommand({
            Bucket: this.bucket,
            Key: key,
            Body: bytes,
            ContentLength: bytes.byteLength,
            ContentType: 'application/octet-stream',
            IfNoneMatch: '*',
          }),
        );
        return 'created';
      } catch (err) {
        const status = statusOf(err);
        if (status === 412) return 'exists';
        // 409 ConditionalRequestConflict: another conditional write of the key is in flight; AWS says retry.
        if (status === 409 && attempt < 8) {
          await new Promise((r) => setTimeout(r, 20 * attempt));
          continue;
        }
        throw this.failure('write', key, err);
      }
    }
  }

  async get(key: string): Promise<Uint8Array> {
    try {
      const out = await this.client.send(new this.s3.GetObjectCommand({ Bucket: this.bucket, Key: key }));
      if (!out.Body) throw new Error('the response had no body');
      return await out.Body.transformToByteArray();
    } catch (err) {
      throw this.failure('read', key, err);
    }
  }

  async exists(key: string): Promise<boolean> {
    try {
      await this.client.send(new this.s3.HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return true;
    } catch (err) {
      if (statusOf(err) === 404) return false;
      throw this.failure('look up', key, err);
    }
  }

  /** Keys under `prefix` in S3's (byte-wise) order, starting after `startAfter` when given. */
  listKeys(prefix: string, startAfter?: string): Promise<string[]> {
    return this.listAll(prefix, { startAfter }, (page) => (page.Contents ?? []).map((o) => o.Key));
  }

  /** The distinct next-level names under `prefix` (S3 common prefixes with delimiter `/`). */
  listFolders(prefix: string): Promise<string[]> {
    return this.listAll(prefix, { delimiter: '/' }, (page) =>
      (page.CommonPrefixes ?? []).map((p) => p.Prefix),
    );
  }

  /** Every page of a listing under `prefix`; `startAfter` applies to the first page only, the token to the rest. */
  private async listAll(
    prefix: string,
    options: { delimiter?: string; startAfter?: string },
    names: (page: ListObjectsV2CommandOutput) => (string | undefined)[],
  ): Promise<string[]> {
    const out: string[] = [];
    let token: string | undefined;
    try {
      do {
        const page = await this.client.send(
          new this.s3.ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: prefix,
            ...(options.delimiter ? { Delimiter: options.delimiter } : {}),
            ...(token
              ? { ContinuationToken: token }
              : options.startAfter
                ? { StartAfter: options.startAfter }
                : {}),
          }),
        );
        for (const name of names(page)) if (name) out.push(name);
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    } catch (err) {
      throw this.failure('list', prefix, err);
    }
    return out;
  }

  destroy(): void {
    this.client.destroy();
  }

  private failure(what: string, key: string, err: unknown): ObjectStoreError {
    return new ObjectStoreError(this.endpoint, this.url(key), what, statusOf(err), err);
  }
}

function statusOf(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}
