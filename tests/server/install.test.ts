// `npm install` as a contributor runs it: no telemetry, only the install scripts the project has reviewed,
// and a committed lockfile that the install leaves as it is (a lockfile rewritten on every install is a
// diff in every contributor's tree, and `npm ci` would not install what was reviewed).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO_DIR } from '../helpers/client-build.js';

const run = promisify(execFile);
const read = (file: string) => JSON.parse(fs.readFileSync(path.join(REPO_DIR, file), 'utf8'));

describe('npm install', () => {
  it("turns Scarf's telemetry off and keeps its postinstall from running", () => {
    const pkg = read('package.json');
    expect(pkg.scarfSettings).toEqual({ enabled: false });
    expect(pkg.allowScripts['@scarf/scarf']).toBe(false);
  });

  it('runs no install script the project has not reviewed: each package with one is allowed or denied', () => {
    const pkg = read('package.json');
    const lock = read('package-lock.json');
    const withScripts = Object.entries<{ hasInstallScript?: boolean }>(lock.packages)
      .filter(([where, entry]) => where !== '' && entry.hasInstallScript)
      .map(([where]) => where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length));
    expect(withScripts.sort()).toEqual(['@scarf/scarf', 'bcrypt', 'esbuild', 'msgpackr-extract']);
    expect(Object.keys(pkg.allowScripts).sort()).toEqual([...new Set(withScripts)].sort());
    // Allowed: bcrypt (builds its binding where no prebuilt one fits), esbuild (checks its binary),
    // msgpackr-extract (the same as bcrypt, for BullMQ's optional decoder).
    expect(pkg.allowScripts).toMatchObject({ bcrypt: true, esbuild: true, 'msgpackr-extract': true });
  });

  it('leaves the committed lockfile unchanged', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lockfile-'));
    try {
      for (const file of ['package.json', 'package-lock.json'])
        fs.copyFileSync(path.join(REPO_DIR, file), path.join(dir, file));
      // What `npm install` writes to the lockfile, without node_modules or the network.
      await run('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund', '--offline'], {
        cwd: dir,
        env: { ...process.env, npm_config_update_notifier: 'false' },
      });
      const written = fs.readFileSync(path.join(dir, 'package-lock.json'), 'utf8');
      expect(written).toBe(fs.readFileSync(path.join(REPO_DIR, 'package-lock.json'), 'utf8'));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
