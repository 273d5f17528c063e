// Builds the client package into client/dist: index.js (ESM) and ONE declaration file, index.d.ts, whose
// only imports are @trpc/client and @trpc/server. The service's router type carries its context (database,
// Express, payment and storage SDK types), so it is not handed to the client as it is: the compiler API
// reads it from src/server-types.ts and writes out, for every procedure, its path, kind, input and output
// fully expanded, as a router type of @trpc/server's public types with an empty context, beside the error
// codes and the error shape. That text replaces the `server-types` region of src/index.ts, and the result
// is compiled alone (strict, DOM and ES2022 only, no Node types): a name the printed types need but a
// browser project would not have fails the build.
//
//   npx tsx client/scripts/build.ts [--out <dir>]
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { TypePrinter } from './print-types.js';

const CLIENT_DIR = path.resolve(import.meta.dirname, '..');
const REPO_DIR = path.resolve(CLIENT_DIR, '..');
/** The client's only window on the service: the module naming the router, codes and error shape. */
const SERVER_TYPES = path.join(CLIENT_DIR, 'src/server-types.ts');
/** The service's compiler options, to read its types as its own typecheck does. */
const SERVICE_TSCONFIG = path.join(REPO_DIR, 'tsconfig.json');
const ENTRY = path.join(CLIENT_DIR, 'src/index.ts');
const CLIENT_TSCONFIG = path.join(CLIENT_DIR, 'tsconfig.build.json');
/** What the declaration file may import: the client's peer dependencies (and zod, which it does not need today). */
export const ALLOWED_IMPORTS = ['@trpc/client', '@trpc/server', 'zod'] as const;

/** The exports of src/server-types.ts that are written out, in this order; AppRouter last, by procedure. */
const NAMED_TYPES = ['ErrorCode', 'ApiIssue', 'ErrorShape'] as const;
const REGION = /^\/\/ #region server-types\b.*\n[\s\S]*?^\/\/ #endregion server-types.*\n/m;

class BuildError extends Error {
  override name = 'BuildError';
}

function readConfig(file: string): ts.ParsedCommandLine {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    file,
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => fail([d]) },
  );
  if (!parsed) throw new BuildError(`cannot read ${file}`);
  if (parsed.errors.length) fail(parsed.errors);
  return parsed;
}

function fail(diagnostics: readonly ts.Diagnostic[]): never {
  const host: ts.FormatDiagnosticsHost = {
    getCanonicalFileName: (f) => f,
    getCurrentDirectory: () => REPO_DIR,
    getNewLine: () => '\n',
  };
  throw new BuildError(ts.formatDiagnostics(diagnostics, host));
}

interface ProcedureNode {
  kind: 'query' | 'mutation' | 'subscription';
  input: string;
  output: string;
  errorShape: string;
}
type RecordNode = Map<string, ProcedureNode | RecordNode>;

/** The declarations that stand for the service's types: codes, issue, error shape and the router. */
export function generateServerTypes(): string {
  const config = readConfig(SERVICE_TSCONFIG);
  const program = ts.createProgram({ rootNames: [SERVER_TYPES], options: { ...config.options, noEmit: true } });
  const source = program.getSourceFile(SERVER_TYPES);
  if (!source) throw new BuildError(`${SERVER_TYPES} not found`);
  const diagnostics = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)];
  if (diagnostics.length) fail(diagnostics);
  const checker = program.getTypeChecker();
  const moduleSymbol = checker.getSymbolAtLocation(source)!;
  const exported = new Map<string, ts.Type>();
  for (const symbol of checker.getExportsOfModule(moduleSymbol)) {
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    exported.set(symbol.name, checker.getDeclaredTypeOfSymbol(target));
  }
  const typeOf = (name: string) => {
    const type = exported.get(name);
    if (!type) throw new BuildError(`${path.relative(REPO_DIR, SERVER_TYPES)} does not export ${name}`);
    return type;
  };

  const printer = new TypePrinter(checker, program);
  for (const name of NAMED_TYPES) printer.name(typeOf(name), name);
  const out: string[] = [];
  out.push('/** Every error code the service answers (`error.data.code` on `/trpc`, `code` of a REST error body). */');
  out.push(`export type ErrorCode =\n${unionLines(checker, typeOf('ErrorCode'))};`, '');
  out.push("/** One problem of a request's input: where (a dotted path), what, and the validator's code. */");
  out.push(`export type ApiIssue = ${printer.printStructure(typeOf('ApiIssue'), 'ApiIssue')};`, '');
  out.push(
    "/** `error` of a `/trpc` error answer: tRPC's envelope with the service's code, status, request id and issues. */",
  );
  out.push(`export type ErrorShape = ${printer.printStructure(typeOf('ErrorShape'), 'ErrorShape')};`, '');

  const record = routerRecord(checker, typeOf('AppRouter'), printer);
  // The client object has `session` beside the router's namespaces (src/index.ts).
  if (record.has('session'))
    throw new BuildError('the router has a top-level "session", which the client uses for signing in and out');
  const routerText = printRecord(record, 0);
  out.push(...printer.declarations.map((d) => `${d}\n`));
  const kinds = new Set<string>(['TRPCBuiltRouter']);
  const collect = (node: RecordNode) =>
    node.forEach((v) => (v instanceof Map ? collect(v) : kinds.add(PROCEDURE_TYPE[v.kind])));
  collect(record);
  out.unshift(`import type { ${[...kinds].sort().join(', ')} } from '@trpc/server';`, '');
  out.push('type RootTypes = { ctx: object; meta: object; errorShape: ErrorShape; transformer: false };', '');
  out.push(
    "/** The service's router as its client sees it: every procedure's kind, input and output, without the server. */",
  );
  out.push(`export type AppRouter = TRPCBuiltRouter<RootTypes, ${routerText}>;`);
  return out.join('\n');
}

/** A union of string literals, one member a line, in the order the service declares them. */
function unionLines(checker: ts.TypeChecker, type: ts.Type): string {
  const members = type.isUnion() ? type.types : [type];
  if (!members.every((m) => m.isStringLiteral()))
    throw new BuildError(`ErrorCode is not a union of strings: ${checker.typeToString(type)}`);
  return members.map((m) => `  | ${JSON.stringify(m.value)}`).join('\n');
}

function property(checker: ts.TypeChecker, type: ts.Type, name: string, where: string): ts.Type {
  const symbol = checker.getPropertyOfType(type, name);
  if (!symbol) throw new BuildError(`${where}: no property ${name} (has tRPC's router type changed?)`);
  return checker.getTypeOfSymbol(symbol);
}

/** The router's procedures, nested as its namespaces are. */
function routerRecord(checker: ts.TypeChecker, router: ts.Type, printer: TypePrinter): RecordNode {
  const record = property(checker, property(checker, router, '_def', 'AppRouter'), 'record', 'AppRouter._def');
  const walk = (type: ts.Type, where: string): RecordNode => {
    const node: RecordNode = new Map();
    for (const symbol of checker.getPropertiesOfType(type)) {
      const name = symbol.getName();
      const at = where ? `${where}.${name}` : name;
      const value = checker.getTypeOfSymbol(symbol);
      const def = checker.getPropertyOfType(value, '_def');
      if (!def) {
        node.set(name, walk(value, at));
        continue;
      }
      const defType = checker.getTypeOfSymbol(def);
      const kind = checker.typeToString(property(checker, defType, 'type', at)).replace(/"/g, '');
      if (kind !== 'query' && kind !== 'mutation' && kind !== 'subscription')
        throw new BuildError(`${at}: unknown procedure kind ${kind}`);
      const types = property(checker, defType, '$types', at);
      node.set(name, {
        kind,
        input: printer.print(property(checker, types, 'input', at), `${at} input`, 3),
        output: printer.print(property(checker, types, 'output', at), `${at} output`, 3),
        errorShape: printer.print(property(checker, types, 'errorShape', at), `${at} error shape`, 3),
      });
    }
    return node;
  };
  return walk(record, '');
}

const PROCEDURE_TYPE = {
  query: 'TRPCQueryProcedure',
  mutation: 'TRPCMutationProcedure',
  subscription: 'TRPCSubscriptionProcedure',
};

function printRecord(node: RecordNode, indent: number): string {
  const pad = '  '.repeat(indent + 1);
  const lines = [...node].map(([name, value]) => {
    const key = /^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name);
    if (value instanceof Map) return `${pad}${key}: ${printRecord(value, indent + 1)};`;
    const inner = '  '.repeat(indent + 2);
    const def = [
      `input: ${value.input};`,
      `output: ${value.output};`,
      'meta: object;',
      `errorShape: ${value.errorShape};`,
    ];
    return `${pad}${key}: ${PROCEDURE_TYPE[value.kind]}<{\n${def.map((d) => `${inner}${d}`).join('\n')}\n${pad}}>;`;
  });
  return `{\n${lines.join('\n')}\n${'  '.repeat(indent)}}`;
}

/** The module specifiers a declaration file imports (import, export from, import() types). */
export function importsOf(text: string, fileName = 'index.d.ts'): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found = new Set<string>();
  const visit = (node: ts.Node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.add(node.moduleSpecifier.text);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      found.add(node.argument.literal.text);
    } else if (ts.isExternalModuleReference(node) && ts.isStringLiteral(node.expression)) {
      found.add(node.expression.text);
    } else if (ts.isModuleDeclaration(node) && ts.isStringLiteral(node.name)) {
      found.add(node.name.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  // Triple-slash references pull in files or type packages too.
  for (const ref of source.referencedFiles) found.add(ref.fileName);
  for (const ref of source.typeReferenceDirectives) found.add(ref.fileName);
  return [...found];
}

const isAllowed = (specifier: string) => ALLOWED_IMPORTS.some((p) => specifier === p || specifier.startsWith(`${p}/`));

/** Writes dist/index.js and dist/index.d.ts; throws on any diagnostic or on an import that is not allowed. */
export function buildClient(outDir = path.join(CLIENT_DIR, 'dist')): { files: string[]; declarationBytes: number } {
  const generated = generateServerTypes();
  const entry = fs.readFileSync(ENTRY, 'utf8');
  if (!REGION.test(entry))
    throw new BuildError(`${ENTRY}: no "// #region server-types" ... "// #endregion server-types" block`);
  const header = "// #region server-types: generated by client/scripts/build.ts from the service's router\n";
  const source = entry.replace(REGION, () => `${header}${generated}\n// #endregion server-types\n`);

  const config = readConfig(CLIENT_TSCONFIG);
  const options: ts.CompilerOptions = {
    ...config.options,
    outDir,
    rootDir: path.dirname(ENTRY),
    noEmit: false,
    noEmitOnError: true,
  };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.readFile = (file) => (path.resolve(file) === ENTRY ? source : readFile(file));
  host.getSourceFile = (file, language, onError, create) =>
    path.resolve(file) === ENTRY
      ? ts.createSourceFile(file, source, language, true)
      : getSourceFile(file, language, onError, create);
  const written: Record<string, string> = {};
  host.writeFile = (file, text) => {
    written[path.resolve(file)] = text;
  };
  const program = ts.createProgram({ rootNames: [ENTRY], options, host });
  const diagnostics = ts.getPreEmitDiagnostics(program);
  if (diagnostics.length) fail(diagnostics);
  // Nothing of the service may be part of the client's compilation.
  const strays = program
    .getSourceFiles()
    .map((f) => path.resolve(f.fileName))
    .filter((f) => f !== ENTRY && !f.includes(`${path.sep}node_modules${path.sep}`));
  if (strays.length)
    throw new BuildError(`the client's compilation reads files of the repository:\n${strays.join('\n')}`);
  const emitted = program.emit();
  if (emitted.emitSkipped || emitted.diagnostics.length) fail(emitted.diagnostics);

  const declarationFile = path.join(outDir, 'index.d.ts');
  const declaration = written[declarationFile];
  if (declaration === undefined) throw new BuildError(`no ${declarationFile} was emitted`);
  const forbidden = Object.entries(written)
    .flatMap(([file, text]) => importsOf(text, file).map((specifier) => ({ file, specifier })))
    .filter(({ specifier }) => !isAllowed(specifier));
  if (forbidden.length) {
    throw new BuildError(
      `dist imports what it may not: ${forbidden.map((f) => `${path.basename(f.file)}: ${f.specifier}`).join(', ')}`,
    );
  }

  fs.rmSync(outDir, { recursive: true, force: true });
  fs.mkdirSync(outDir, { recursive: true });
  for (const [file, text] of Object.entries(written)) fs.writeFileSync(file, text);
  return { files: Object.keys(written).sort(), declarationBytes: Buffer.byteLength(declaration) };
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const at = process.argv.indexOf('--out');
  const outDir = at > 0 ? path.resolve(process.argv[at + 1]) : undefined;
  try {
    const started = performance.now();
    const { files, declarationBytes } = buildClient(outDir);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(
      `client built in ${seconds} s: ${files.map((f) => path.relative(REPO_DIR, f)).join(', ')}` +
        ` (declarations ${declarationBytes} bytes)`,
    );
  } catch (err) {
    console.error(err instanceof BuildError ? `build:client failed: ${err.message}` : err);
    process.exitCode = 1;
  }
}
