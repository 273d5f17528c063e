// Types for s3rver 3.7 (the package ships none): the parts tests/helpers/s3-server.ts uses.
declare module 's3rver' {
  import type { AddressInfo } from 'node:net';

  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory?: string;
    resetOnClose?: boolean;
    configureBuckets?: Array<{ name: string }>;
  }

  export default class S3rver {
    constructor(options?: S3rverOptions);
    run(): Promise<AddressInfo>;
    close(): Promise<void>;
  }
}

declare module 's3rver/lib/models/account.js' {
  interface AWSAccount {
    createKeyPair(accessKeyId: string, secretAccessKey: string): void;
  }
  const AWSAccount: { DUMMY_ACCOUNT: AWSAccount };
  export default AWSAccount;
}
