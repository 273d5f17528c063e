// The client package built from the working tree (`npm run build:client`), once for all the test files
// that need client/dist: the first builds it under a lock, the others wait; a build whose inputs have not
// changed since (a hash of the sources it reads, kept beside dist) is not run again.
import crypto from 'node:crypto';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { holdsWithin } from './wait.js';

export const REPO_DIR = path.resolve(import.meta.dirname, '../..');
export const CLIENT_DIR = path.join(REPO_DIR, 'client');
export const DIST_DIR = path.join(CLIENT_DIR, 'dist');
const LOCK = path.join(CLIENT_DIR, '.build-lock');
const STAMP = path.join(CLIENT_DIR, '.dist-inputs-hash');
/** What the build reads: the service's sources (its types), the client's, and the installed packages. */
const INPUT_DIRS = ['server', 'routers', 'db', 'jobs', 'openapi', 'client/src', 'client/scripts'];
const INPUT_FILES = ['package-lock.json', 'tsconfig.json', 'client/tsconfig.build.json'];

function inputsHash(): string {
  const hash = crypto.createHash('sha256');
  const add = (file: string) =>
    hash
      .update(file)
      .update('\0')
      .update(fs.readFileSync(path.join(REPO_DIR, file)))
      .update('\0');
  for (const dir of INPUT_DIRS) {
    const files = fs
      .readdirSync(path.join(REPO_DIR, dir), { recursive: true, encoding: 'utf8' })
      .filter((f) => /\.(ts|json)$/.test(f));
    for (const file of files.sort()) add(path.join(dir, file));
  }
  for (const file of INPUT_FILES) add(file);
  return hash.digest('hex');
}

async function withLock<T>(work: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 240_000;
  for (;;) {
    try {
      fs.mkdirSync(LOCK);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // A lock left by a run that was killed mid-build.
      const age = Date.now() - (fs.statSync(LOCK, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 300_000) fs.rmSync(LOCK, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`client build: ${LOCK} is held by another run`, { cause: err });
      // Until the other run removes the lock (or it is old enough to be a dead run's).
      await holdsWithin(() => !fs.existsSync(LOCK), 5_000, 50);
    }
  }
  try {
    return await work();
  } finally {
    fs.rmSync(LOCK, { recursive: true, force: true });
  }
}

/** client/dist, built from the working tree if it is not already. */
export async function builtClient(): Promise<string> {
  return withLock(async () => {
    const hash = inputsHash();
    const built = fs.existsSync(path.join(DIST_DIR, 'index.d.ts')) && fs.existsSync(path.join(DIST_DIR, 'index.js'));
    if (built && fs.existsSync(STAMP) && fs.readFileSync(STAMP, 'utf8') === hash) return DIST_DIR;
    const tsx = path.join(REPO_DIR, 'node_modules/.bin/tsx');
    await promisify(execFile)(tsx, [path.join(CLIENT_DIR, 'scripts/build.ts')], { cwd: REPO_DIR }).catch(
      (err: Error & { stderr?: string }) => {
        throw new Error(`npm run build:client failed:\n${err.stderr ?? err.message}`);
      },
    );
    fs.writeFileSync(STAMP, hash);
    return DIST_DIR;
  });
}
