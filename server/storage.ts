// Where uploaded files live. STORAGE_PROVIDER=LOCAL keeps them under STORAGE_LOCAL_DIR, by generated keys
// only (the client's file name never becomes a path).
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Config } from './config.js';

export interface Storage {
  readonly provider: 'LOCAL';
  put(key: string, data: Buffer): Promise<void>;
  get(key: string): Promise<Buffer | undefined>;
  delete(key: string): Promise<void>;
}

const SAFE_KEY = /^[a-z0-9-]+\/[A-Za-z0-9_-]+\.[a-z0-9]+$/;

export function createStorage(config: Pick<Config, 'STORAGE_LOCAL_DIR'>): Storage {
  const root = path.resolve(config.STORAGE_LOCAL_DIR);
  const fileOf = (key: string) => {
    if (!SAFE_KEY.test(key)) throw new Error('unsafe storage key');
    return path.join(root, key);
  };
  return {
    provider: 'LOCAL',
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
