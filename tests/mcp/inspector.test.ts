// The MCP Inspector's CLI mode against the app: `mcp-inspector --cli <url> --transport http --method
// tools/list --header "Authorization: Bearer wsk_..."`, as docs/api.md tells users to run it. The CLI is
// @modelcontextprotocol/inspector-cli, the same launcher and CLI that `npx @modelcontextprotocol/inspector
// --cli` runs, without the web UI's packages (the @modelcontextprotocol/inspector package itself asks for
// Node >= 22.7.5; the CLI asks for no particular Node and runs on this project's 20).
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createKey, ownerOn, trackSecret } from '../developer/helpers.js';

const run = promisify(execFile);
const CLI = path.join(
  path.dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/inspector-cli/package.json')),
  'build',
  'cli.js',
);

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
});
afterAll(async () => {
  await app?.close();
});

/**
 * The inspector's CLI run on /mcp: its stdout parsed (JSON in CLI mode). It runs in its own build folder:
 * the CLI reads its package.json for the client's name by a path it tests against the working directory.
 * A failure's message has `secret` (given in --header, so in the command line) replaced.
 */
async function inspector(args: string[], secret?: string) {
  try {
    const { stdout } = await run(
      process.execPath,
      [CLI, '--cli', new URL('/mcp', app.url).href, '--transport', 'http', ...args],
      { timeout: 60_000, cwd: path.dirname(CLI), env: { ...process.env, NO_COLOR: '1' } },
    );
    return JSON.parse(stdout) as Record<string, unknown>;
  } catch (err) {
    const { code, stdout, stderr } = err as { code?: number; stdout?: string; stderr?: string };
    const redact = (text = '') => (secret ? text.replaceAll(secret, '<the API key>') : text);
    throw Object.assign(new Error(`the inspector exited with ${code}: ${redact(stderr)} ${redact(stdout)}`), {
      code,
      stderr: redact(stderr),
    });
  }
}

describe('the MCP Inspector CLI', () => {
  it('lists the tools with an API key in --header, and calls one', async () => {
    const owner = await ownerOn(app, 'enterprise', 'mcp-inspector');
    const key = await createKey(app, owner, { scopes: ['read'] });
    trackSecret(key.rawKey, 'an API key given to the inspector');
    const header = ['--header', `Authorization: Bearer ${key.rawKey}`];
    const listed = (await inspector([...header, '--method', 'tools/list'], key.rawKey)) as {
      tools: Array<{ name: string }>;
    };
    const names = listed.tools.map((t) => t.name);
    for (const name of ['ai_history', 'ai_generate', 'workspaces_get', 'webhooks_retry', 'billing_current'])
      expect(names).toContain(name);
    const called = await inspector([...header, '--method', 'tools/call', '--tool-name', 'workspaces_get'], key.rawKey);
    expect(called).toMatchObject({ structuredContent: { id: owner.workspaceId } });
  }, 120_000);

  it('fails without a credential: the 401 (UNAUTHORIZED) ends the run', async () => {
    await expect(inspector(['--method', 'tools/list'])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/UNAUTHORIZED/),
    });
  }, 120_000);
});
