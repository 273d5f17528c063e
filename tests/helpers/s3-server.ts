// A real S3-compatible server (s3rver) on loopback, its objects in a temporary folder, for the
// STORAGE_PROVIDER=S3 tests; and an SDK client that looks into its bucket directly, not through the app.
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';
import AWSAccount from 's3rver/lib/models/account.js';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';

export interface TestS3 {
  /** For S3_ENDPOINT, e.g. http://127.0.0.1:40123 */
  endpoint: string;
  bucket: string;
  /** A key id made for this server; s3rver refuses unknown ones (it does not check SigV4 signatures). */
  accessKeyId: string;
  /** The settings that point the app at this server. */
  env(secretAccessKey: string): Record<string, string>;
  /** Every object key in the bucket, sorted. */
  keys(): Promise<string[]>;
  object(key: string): Promise<{ body: Buffer; contentType: string | undefined }>;
  /** Stops the server (the provider goes down); the objects stay on disk until close(). */
  stop(): Promise<void>;
  close(): Promise<void>;
}

export async function startS3(): Promise<TestS3> {
  const directory = await fs.mkdtemp(path.join(os.tmpdir(), 's3rver-'));
  const bucket = `uploads-${crypto.randomBytes(4).toString('hex')}`;
  const accessKeyId = `AKIATEST${crypto.randomBytes(6).toString('hex').toUpperCase()}`;
  AWSAccount.DUMMY_ACCOUNT.createKeyPair(accessKeyId, 'unused-by-sigv4');
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: bucket }],
  });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId, secretAccessKey: 'test-client' },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  let running = true;
  const stop = async () => {
    if (!running) return;
    running = false;
    await server.close();
  };
  return {
    endpoint,
    bucket,
    accessKeyId,
    env: (secretAccessKey) => ({
      STORAGE_PROVIDER: 'S3',
      S3_ENDPOINT: endpoint,
      S3_BUCKET: bucket,
      S3_ACCESS_KEY_ID: accessKeyId,
      S3_SECRET_ACCESS_KEY: secretAccessKey,
      S3_FORCE_PATH_STYLE: 'true',
    }),
    async keys() {
      const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket }));
      return (listed.Contents ?? []).map((o) => o.Key!).sort();
    },
    async object(key) {
      const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return { body: Buffer.from(await got.Body!.transformToByteArray()), contentType: got.ContentType };
    },
    stop,
    async close() {
      await stop();
      client.destroy();
      await fs.rm(directory, { recursive: true, force: true });
    },
  };
}
