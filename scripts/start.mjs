// `npm start` (node scripts/start.mjs server) and `npm run worker` (node scripts/start.mjs worker): runs the
// compiled JavaScript of dist/ when it was built from the sources as they are now (its .sources-hash
// matches, scripts/sources.mjs), else the TypeScript sources through tsx, as `npm run dev` does. So a
// dist/ left behind by an older checkout never runs, and `npm install && npm start` works with no build.
// The entry runs in this process: signals and the exit code are its own.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { DIST, ROOT, sourcesHash } from './sources.mjs';

const ENTRIES = { server: 'server/index', worker: 'server/worker' };
const entry = ENTRIES[process.argv[2]];
if (!entry) {
  console.error(`usage: node scripts/start.mjs ${Object.keys(ENTRIES).join('|')}`);
  process.exit(2);
}

const hashFile = path.join(DIST, '.sources-hash');
const builtFrom = fs.existsSync(hashFile) ? fs.readFileSync(hashFile, 'utf8').trim() : undefined;
if (builtFrom !== undefined && builtFrom === sourcesHash()) {
  await import(pathToFileURL(path.join(DIST, `${entry}.js`)).href);
} else {
  if (builtFrom !== undefined)
    console.error(
      `${path.relative(ROOT, DIST) || DIST}/ was built from other sources than these: running the TypeScript sources with tsx (npm run build to run compiled)`,
    );
  await import('tsx');
  await import(pathToFileURL(path.join(ROOT, `${entry}.ts`)).href);
}
