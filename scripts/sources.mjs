// What `npm run build` compiles, and the hash that tells whether dist/ was built from the sources as they
// are now: every .ts file of the service's folders, by path and content. Dependencies are not part of it:
// dist/ imports them from node_modules at run time, as the sources do.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** Where the build goes; START_DIST_DIR moves it (the launcher's tests build into a folder of their own). */
export const DIST = process.env.START_DIST_DIR ? path.resolve(process.env.START_DIST_DIR) : path.join(ROOT, 'dist');
export const SOURCE_FOLDERS = ['server', 'routers', 'db', 'jobs', 'demo', 'openapi'];

/** The service's .ts files (not declaration files), relative to the root, in a stable order. */
export function sourceFiles() {
  const files = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) files.push(rel);
    }
  };
  for (const folder of SOURCE_FOLDERS) walk(folder);
  return files.sort();
}

export function sourcesHash(files = sourceFiles()) {
  const hash = crypto.createHash('sha256');
  for (const file of files) {
    hash.update(`${file}\0`);
    hash.update(fs.readFileSync(path.join(ROOT, file)));
    hash.update('\0');
  }
  return hash.digest('hex');
}
