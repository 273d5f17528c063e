// patches/ holds changes to dependencies that `npm install` / `npm ci` apply (postinstall: patch-package).
// A skipped postinstall or a dependency upgraded past its patch would silently lose them.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);

describe('patched dependencies', () => {
  it('trpc-to-openapi is the version its patch was made for, with the patch applied', () => {
    const patches = fs.readdirSync('patches').filter((f) => f.startsWith('trpc-to-openapi+'));
    expect(patches).toEqual(['trpc-to-openapi+3.3.0.patch']);
    const installed = JSON.parse(fs.readFileSync('node_modules/trpc-to-openapi/package.json', 'utf8')).version;
    expect(installed).toBe('3.3.0');
    // The REST handler builds only the abort signal of a request, not a whole Fetch Request.
    for (const file of [
      'node_modules/trpc-to-openapi/dist/esm/utils/method.mjs',
      'node_modules/trpc-to-openapi/dist/cjs/utils/method.js',
    ]) {
      const source = fs.readFileSync(file, 'utf8');
      expect(source).toContain('Patched (patches/trpc-to-openapi+3.3.0.patch)');
      expect(source).not.toMatch(/incomingMessageToRequest\)?\(req, res/);
    }
    expect(require.resolve('patch-package')).toBeTruthy();
  });

  it('@trpc/server is the version its patch was made for, with the patch applied', () => {
    const patches = fs.readdirSync('patches').filter((f) => f.startsWith('@trpc+server+'));
    expect(patches).toEqual(['@trpc+server+11.25.2.patch']);
    expect(JSON.parse(fs.readFileSync('node_modules/@trpc/server/package.json', 'utf8')).version).toBe('11.25.2');
    // Middleware calls copy their options with Object.assign, not the per-property _objectSpread2 helper.
    const files = fs.readdirSync('node_modules/@trpc/server/dist').filter((f) => /^initTRPC-.*\.(mjs|cjs)$/.test(f));
    expect(files).toHaveLength(2);
    for (const file of files) {
      const source = fs.readFileSync(`node_modules/@trpc/server/dist/${file}`, 'utf8');
      expect(source).toContain('async function callRecursive');
      expect(source).toContain('Patched (patches/@trpc+server+11.25.2.patch)');
      expect(source).toContain('Object.assign({}, opts, {');
    }
  });
});
