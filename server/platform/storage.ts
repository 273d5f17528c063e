// Where uploaded files live: STORAGE_PROVIDER=LOCAL keeps them under STORAGE_LOCAL_DIR, S3 in a bucket of
// AWS S3 or an S3-compatible service (MinIO, R2, ...). Either way by generated keys only: the client's file
// name never becomes a path or an object key.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import type { Config } from './config.js';
import { AppError } from './errors.js';

export interface Storage {
  readonly provider: Config['STORAGE_PROVIDER'];
  /** False when the selected provider lacks its settings: every call then throws STORAGE_NOT_CONFIGURED. */
  readonly configured: boolean;
  /** Stores a new object. LOCAL keeps the type in the files row only; S3 also sets it on the object. */
  put(key: string, data: Buffer, contentType: string): Promise<void>;
  /** The object's bytes, or undefined when there is no such object. */
  get(key: string): Promise<Buffer | undefined>;
  /** Removes the object; removing a missing one is not an error. */
  delete(key: string): Promise<void>;
}

export type StorageConfig = Pick<
  Config,
  | 'STORAGE_PROVIDER'
  | 'STORAGE_LOCAL_DIR'
  | 'S3_ENDPOINT'
  | 'S3_REGION'
  | 'S3_BUCKET'
  | 'S3_ACCESS_KEY_ID'
  | 'S3_SECRET_ACCESS_KEY'
  | 'S3_FORCE_PATH_STYLE'
>;

/** `folder/<generated name>.<ext>`, as the upload routes make them. Anything else is a bug, refused. */
const SAFE_KEY = /^[a-z0-9-]+\/[A-Za-z0-9_-]+\.[a-z0-9]+$/;

function checkedKey(key: string): string {
  if (!SAFE_KEY.test(key)) throw new Error('unsafe storage key');
  return key;
}

export function createStorage(config: StorageConfig): Storage {
  return config.STORAGE_PROVIDER === 'S3' ? createS3Storage(config) : createLocalStorage(config);
}

function createLocalStorage(config: Pick<Config, 'STORAGE_LOCAL_DIR'>): Storage {
  const root = path.resolve(config.STORAGE_LOCAL_DIR);
  const fileOf = (key: string) => path.join(root, checkedKey(key));
  return {
    provider: 'LOCAL',
    configured: true,
    async put(key, data) {
      const file = fileOf(key);
      await fs.mkdir(path.dirname(file), { recursive: true });
      await fs.writeFile(file, data, { flag: 'wx' });
    },
    async get(key) {
      return fs.readFile(fileOf(key)).catch(() => undefined);
    },
    async delete(key) {
      await fs.rm(fileOf(key), { force: true });
    },
  };
}

/**
 * A failed call to the S3 provider as the client sees it: friendly and empty of anything the provider
 * said. `detail` (operation, HTTP status, the provider's error name) reaches the server log only; it never
 * holds the keys, which is why the SDK's own error is not kept as the cause.
 */
export class StorageFailure extends AppError {
  constructor(
    readonly detail: { operation: 'put' | 'get' | 'delete'; kind: string; status?: number; providerCode?: string },
  ) {
    super(
      'STORAGE_PROVIDER_ERROR',
      `The file storage ${detail.kind}. ${detail.operation === 'put' ? 'Nothing was saved; please' : 'Please'} try again in a moment.`,
    );
    this.name = 'StorageFailure(S3)';
  }
}

function storageFailure(operation: StorageFailure['detail']['operation'], err: unknown): StorageFailure {
  const e = (err ?? {}) as { name?: unknown; code?: unknown; $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode;
  const name = typeof e.name === 'string' && e.name !== 'Error' ? e.name : undefined;
  const providerCode = name ?? (typeof e.code === 'string' ? e.code : undefined);
  let kind = 'could not be reached';
  if (/timeout/i.test(`${name} ${String(e.code)}`) || e.code === 'ETIMEDOUT') kind = 'did not answer in time';
  else if (status === 401 || status === 403) kind = 'refused our credentials';
  else if (status !== undefined) kind = status >= 500 ? 'had an internal error' : 'answered with an error';
  return new StorageFailure({ operation, kind, status, providerCode });
}

type S3Sdk = typeof import('@aws-sdk/client-s3');

/**
 * Bucket and both keys are needed; without them the provider reports `configured: false` and every call
 * is a 503 STORAGE_NOT_CONFIGURED, so a half-configured deployment still starts. The SDK (about 100 ms
 * to load) is imported on the first call, so LOCAL deployments never pay for it.
 */
function createS3Storage(config: StorageConfig): Storage {
  const { S3_BUCKET: bucket, S3_ACCESS_KEY_ID: accessKeyId, S3_SECRET_ACCESS_KEY: secretAccessKey } = config;
  const configured = Boolean(bucket && accessKeyId && secretAccessKey);
  let connection: Promise<{ sdk: S3Sdk; client: S3Client }> | undefined;
  const connect = () =>
    (connection ??= import('@aws-sdk/client-s3').then((sdk) => {
      const options: S3ClientConfig = {
        region: config.S3_REGION,
        endpoint: config.S3_ENDPOINT,
        forcePathStyle: config.S3_FORCE_PATH_STYLE,
        credentials: { accessKeyId: accessKeyId!, secretAccessKey: secretAccessKey! },
        requestHandler: { connectionTimeout: 5_000, requestTimeout: 30_000 },
        // S3-compatible services do not all accept the CRC32 checksum headers the SDK sends by default
        // since early 2025; with a custom endpoint, checksums are sent and checked only where S3 requires.
        ...(config.S3_ENDPOINT && {
          requestChecksumCalculation: 'WHEN_REQUIRED',
          responseChecksumValidation: 'WHEN_REQUIRED',
        }),
      };
      return { sdk, client: new sdk.S3Client(options) };
    }));

  async function call<T>(
    operation: StorageFailure['detail']['operation'],
    key: string,
    fn: (s3: { sdk: S3Sdk; client: S3Client }, key: string) => Promise<T>,
  ) {
    checkedKey(key);
    if (!configured)
      throw new AppError(
        'STORAGE_NOT_CONFIGURED',
        'File storage is not available: S3 is selected but its bucket or access keys are not set. Please contact support.',
      );
    const s3 = await connect();
    try {
      return await fn(s3, key);
    } catch (err) {
      throw storageFailure(operation, err);
    }
  }

  return {
    provider: 'S3',
    configured,
    put: (key, data, contentType) =>
      call('put', key, async ({ sdk, client }) => {
        await client.send(
          new sdk.PutObjectCommand({
            Bucket: bucket,
            Key: key,
            Body: data,
            ContentType: contentType,
            ContentLength: data.length,
          }),
        );
      }),
    get: (key) =>
      call('get', key, async ({ sdk, client }) => {
        try {
          const object = await client.send(new sdk.GetObjectCommand({ Bucket: bucket, Key: key }));
          const bytes = await object.Body?.transformToByteArray();
          return bytes && Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
        } catch (err) {
          if ((err as { name?: unknown })?.name === 'NoSuchKey') return undefined;
          throw err;
        }
      }),
    delete: (key) =>
      call('delete', key, async ({ sdk, client }) => {
        await client.send(new sdk.DeleteObjectCommand({ Bucket: bucket, Key: key }));
      }),
  };
}
