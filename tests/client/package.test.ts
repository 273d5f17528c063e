// The client package as a front end gets it: `npm run build:client` emits client/dist (ESM and one
// declaration file importing only tRPC), and a strict front-end project (tests/client-consumer) compiles
// against it alone, with the service's procedures, error codes and error shape typed.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';
import { builtClient, CLIENT_DIR, REPO_DIR } from '../helpers/client-build.js';
import { ERROR_STATUS } from '../../server/platform/errors.js';
import { parseConfig } from '../../server/platform/config.js';

const CONSUMER_DIR = path.join(REPO_DIR, 'tests/client-consumer');

let dist: string;
let declaration: string;
beforeAll(async () => {
  dist = await builtClient();
  declaration = fs.readFileSync(path.join(dist, 'index.d.ts'), 'utf8');
}, 240_000);

/** What a file imports, read by TypeScript's own pre-processor (imports, import() types, references). */
function dependenciesOf(text: string) {
  const info = ts.preProcessFile(text, true, true);
  return {
    modules: [...new Set(info.importedFiles.map((f) => f.fileName))].sort(),
    references: [...info.referencedFiles, ...info.typeReferenceDirectives].map((f) => f.fileName),
    libs: info.libReferenceDirectives.map((f) => f.fileName),
  };
}

const packageOf = (specifier: string) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

describe('npm run build:client', () => {
  it('emits client/dist with the JavaScript (ESM) and one declaration file, index.d.ts', () => {
    expect(fs.readdirSync(dist).sort()).toEqual(['index.d.ts', 'index.js']);
    const pkg = JSON.parse(fs.readFileSync(path.join(CLIENT_DIR, 'package.json'), 'utf8'));
    expect(pkg).toMatchObject({
      name: '@workspace-saas/client',
      type: 'module',
      exports: { '.': { types: './dist/index.d.ts', import: './dist/index.js' } },
    });
  });

  it('writes a declaration file that imports nothing but @trpc/client, @trpc/server and zod', () => {
    const deps = dependenciesOf(declaration);
    expect(deps.modules.length).toBeGreaterThan(0);
    expect(deps.modules.filter((m) => !['@trpc/client', '@trpc/server', 'zod'].includes(packageOf(m)))).toEqual([]);
    expect(deps.references).toEqual([]);
    expect(deps.libs).toEqual(['esnext.disposable']);
  });

  it('writes JavaScript that imports only @trpc/client and @trpc/server', () => {
    const deps = dependenciesOf(fs.readFileSync(path.join(dist, 'index.js'), 'utf8'));
    expect(deps.modules.map(packageOf).sort()).toEqual(['@trpc/client', '@trpc/server']);
  });

  it('declares ErrorCode as exactly the codes of ERROR_STATUS (server/platform/errors.ts)', () => {
    const source = ts.createSourceFile('index.d.ts', declaration, ts.ScriptTarget.Latest, true);
    const alias = source.statements.find(
      (s): s is ts.TypeAliasDeclaration => ts.isTypeAliasDeclaration(s) && s.name.text === 'ErrorCode',
    );
    expect(alias).toBeDefined();
    const members = ts.isUnionTypeNode(alias!.type) ? alias!.type.types : [alias!.type];
    const codes = members.map((m) =>
      ts.isLiteralTypeNode(m) && ts.isStringLiteral(m.literal) ? m.literal.text : m.getText(),
    );
    expect(codes.sort()).toEqual(Object.keys(ERROR_STATUS).sort());
  });

  it('batches no more calls in one request than the server accepts by default (TRPC_MAX_BATCH_SIZE)', async () => {
    const client = (await import(path.join(dist, 'index.js'))) as typeof import('../../client/src/index.js');
    expect(client.MAX_BATCH_ITEMS).toBe(parseConfig({ DATABASE_URL: 'memory://' }).TRPC_MAX_BATCH_SIZE);
    expect(client.MAX_BATCH_ITEMS).toBe(100);
  });
});

/** Compiles tests/client-consumer as `tsc -p` would, with the client installed as npm installs a file: dependency. */
function compileConsumer(extraFiles: Record<string, string> = {}) {
  const link = path.join(CONSUMER_DIR, 'node_modules/@workspace-saas/client');
  if (!fs.existsSync(link)) {
    fs.mkdirSync(path.dirname(link), { recursive: true });
    fs.symlinkSync(path.relative(path.dirname(link), CLIENT_DIR), link, 'dir');
  }
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(CONSUMER_DIR, 'tsconfig.json'),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
  )!;
  expect(config.errors).toEqual([]);
  const host = ts.createCompilerHost(config.options);
  const extra = new Map(Object.entries(extraFiles).map(([name, text]) => [path.join(CONSUMER_DIR, 'src', name), text]));
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (f) => extra.has(f) || fileExists.call(host, f);
  host.readFile = (f) => extra.get(f) ?? readFile.call(host, f);
  host.getSourceFile = (f, lang, onError, create) => {
    const text = extra.get(f);
    return text === undefined
      ? getSourceFile.call(host, f, lang, onError, create)
      : ts.createSourceFile(f, text, lang, true);
  };
  const program = ts.createProgram({
    rootNames: [...config.fileNames, ...extra.keys()],
    options: config.options,
    host,
  });
  const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file
      ? `${path.relative(REPO_DIR, d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}`
      : '';
    return `${where} TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
  });
  return { program, diagnostics };
}

describe('a strict front-end project compiling against client/dist alone (tests/client-consumer)', () => {
  it('compiles strict, libraries checked: inputs, outputs, error narrowing, a misspelled code refused', () => {
    const { diagnostics } = compileConsumer();
    expect(diagnostics).toEqual([]);
  });

  it('reads no file of the service and no package but @trpc/client and @trpc/server', () => {
    const { program } = compileConsumer();
    const files = program.getSourceFiles().map((f) => path.resolve(f.fileName));
    const allowed = (f: string) =>
      f.startsWith(`${CONSUMER_DIR}${path.sep}src${path.sep}`) ||
      f === path.join(CLIENT_DIR, 'dist/index.d.ts') ||
      ['@trpc/client', '@trpc/server', 'typescript/lib'].some((p) =>
        f.startsWith(path.join(REPO_DIR, 'node_modules', p) + path.sep),
      );
    expect(files.filter((f) => !allowed(f)).map((f) => path.relative(REPO_DIR, f))).toEqual([]);
    // Of the service: one declaration file.
    expect(files.filter((f) => f.startsWith(CLIENT_DIR))).toEqual([path.join(CLIENT_DIR, 'dist/index.d.ts')]);
  });

  it('refuses a misspelled code, a wrong input, an unknown procedure and a missing output field', () => {
    const { diagnostics } = compileConsumer({
      'wrong.ts': [
        "import { createApiClient, isApiError, type RouterOutputs } from '@workspace-saas/client';",
        "const api = createApiClient({ baseUrl: 'http://localhost:3000' });",
        "export const a = (e: unknown) => isApiError(e, 'EMAIL_TAKN');",
        "export const b = () => api.auth.login.mutate({ email: 'a@b.c', password: 42 });",
        'export const c = () => api.auth.nope.query();',
        "export const d = (me: RouterOutputs['auth']['me']) => me.user.passwordHash;",
      ].join('\n'),
    });
    const lines = diagnostics.map((d) => d.match(/wrong\.ts:(\d+)/)?.[1]);
    expect(lines, diagnostics.join('\n')).toEqual(['3', '4', '5', '6']);
  });
});

describe('client/README.md', () => {
  it('lists every error code of the service with its HTTP status', () => {
    const readme = fs.readFileSync(path.join(CLIENT_DIR, 'README.md'), 'utf8');
    const missing = Object.entries(ERROR_STATUS).filter(
      // A table row, however Prettier pads its cells.
      ([code, status]) => !new RegExp(`\\|\\s*\`${code}\`\\s*\\|\\s*${status}\\s*\\|`).test(readme),
    );
    expect(missing).toEqual([]);
  });
});
