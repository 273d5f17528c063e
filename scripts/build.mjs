// `npm run build`: compiles the service (server/, routers/, db/, jobs/, demo/, openapi/) to JavaScript in
// dist/, one file per source file (esbuild, which tsx already brings; no bundling, so a module imported
// only when the settings use it is still loaded only then), and writes dist/.sources-hash, the hash of the
// sources it was built from. scripts/start.mjs runs dist/ only when that hash matches the sources of the
// moment, so a dist/ left from older sources never runs (docs/decisions.md, "A lean process").
// Type checking is `npm run typecheck`'s job, not the build's.
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { DIST, ROOT, sourceFiles, sourcesHash } from './sources.mjs';

const started = Date.now();
const entryPoints = sourceFiles();
fs.rmSync(DIST, { recursive: true, force: true });
await build({
  absWorkingDir: ROOT,
  entryPoints,
  outdir: DIST,
  outbase: ROOT,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
});
fs.writeFileSync(path.join(DIST, '.sources-hash'), `${sourcesHash(entryPoints)}\n`);
console.log(`built ${entryPoints.length} files into ${path.relative(ROOT, DIST)}/ in ${Date.now() - started} ms`);
