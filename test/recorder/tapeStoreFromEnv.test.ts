import { describe, expect, it } from 'vitest';
import {
  FolderTapeStore,
  ObjectTapeStore,
  objectStoreConfigFromEnv,
  TapeStoreConfigError,
  tapeStoreFromEnv,
} from '../../src/recorder';

describe('which tape store the environment selects', () => {
  it('is the folder without JUKEBOX_TAPE_STORE, and the object store with an s3:// URL', async () => {
    expect(tapeStoreFromEnv({}, { JUKEBOX_TAPE_DIR: '/tmp/x' })).toBeInstanceOf(FolderTapeStore);
    const env = {
      JUKEBOX_TAPE_STORE: 's3://team-tapes/prod/runs',
      JUKEBOX_S3_ENDPOINT: 'http://127.0.0.1:9',
    };
    const store = tapeStoreFromEnv({}, env);
    expect(store).toBeInstanceOf(ObjectTapeStore);
    expect(store.location).toBe('s3://team-tapes/prod/runs/');
    await store.close();
    // An explicit folder wins over the environment.
    expect(tapeStoreFromEnv({ dir: '/tmp/y' }, env)).toBeInstanceOf(FolderTapeStore);
    expect(
      objectStoreConfigFromEnv({ JUKEBOX_TAPE_STORE: 's3://bk1', JUKEBOX_S3_REGION: 'eu-west-1' }),
    ).toEqual({
      bucket: 'bk1',
      prefix: '',
      region: 'eu-west-1',
    });
  });

  it('names the variable and a valid form when a setting is malformed', () => {
    const bad = (env: NodeJS.ProcessEnv) => {
      try {
        objectStoreConfigFromEnv(env);
      } catch (err) {
        return err;
      }
      throw new Error('no error');
    };
    const e1 = bad({ JUKEBOX_TAPE_STORE: '/var/tapes' });
    expect(e1).toBeInstanceOf(TapeStoreConfigError);
    expect((e1 as Error).message).toBe(
      'JUKEBOX_TAPE_STORE is "/var/tapes"; use s3://BUCKET/PREFIX/ for an object store, or unset it and set JUKEBOX_TAPE_DIR for a folder',
    );
    const e2 = bad({ JUKEBOX_TAPE_STORE: 's3://ok-bucket/', JUKEBOX_S3_ENDPOINT: 'minio:9000' });
    expect((e2 as Error).message).toMatch(
      /^JUKEBOX_S3_ENDPOINT is "minio:9000"; use http\(s\):\/\/HOST:PORT$/,
    );
  });
});
