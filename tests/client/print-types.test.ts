// The printer of the client build (client/scripts/print-types.ts): what it writes out, and what it
// refuses rather than leak a name of the server into the client's declarations.
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { TypePrinter, TypePrintError } from '../../client/scripts/print-types.js';

/** The types `names` of a module made of `source`, and a printer over its program. */
function typesOf(source: string) {
  const file = path.resolve('virtual-module.ts');
  const options: ts.CompilerOptions = {
    strict: true,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2022.d.ts'],
    types: [],
    noEmit: true,
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (f) => path.resolve(f) === file || fileExists.call(host, f);
  host.readFile = (f) => (path.resolve(f) === file ? source : readFile.call(host, f));
  host.getSourceFile = (f, lang, onError, create) =>
    path.resolve(f) === file
      ? ts.createSourceFile(f, source, lang, true)
      : getSourceFile.call(host, f, lang, onError, create);
  const program = ts.createProgram({ rootNames: [file], options, host });
  expect(ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, ' '))).toEqual([]);
  const checker = program.getTypeChecker();
  const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(file)!)!;
  const type = (name: string) =>
    checker.getDeclaredTypeOfSymbol(checker.getExportsOfModule(moduleSymbol).find((s) => s.name === name)!);
  return { type, printer: new TypePrinter(checker, program) };
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ');

describe('TypePrinter', () => {
  it('writes objects, unions, literals, arrays, tuples and index signatures out, and names Date', () => {
    const { type, printer } = typesOf(`
      interface Row { id: string; created: Date }
      type Status = 'ACTIVE' | 'SUSPENDED';
      export type T = {
        readonly row: Row;
        status: Status | null;
        flag: boolean | undefined;
        count?: number;
        list: Row[];
        pair: readonly [string, number?];
        tags: Record<string, string[]>;
        "odd-key": 1 | -2 | 10n;
        mail: \`\${string}@\${string}\`;
      };`);
    expect(oneLine(printer.printStructure(type('T'), 'T'))).toBe(
      oneLine(`{
        readonly row: { id: string; created: Date; };
        status: "ACTIVE" | "SUSPENDED" | null;
        flag: boolean | undefined;
        count?: number | undefined;
        list: Array<{ id: string; created: Date; }>;
        pair: readonly [string, (number | undefined)?];
        tags: { [key: string]: string[]; };
        "odd-key": 1 | -2 | 10n;
        mail: \`\${string}@\${string}\`;
      }`),
    );
  });

  it('writes an object made of an intersection as one object, and a named type by its name', () => {
    const { type, printer } = typesOf(`
      export type Code = 'A' | 'B';
      export type T = { a: string } & { b: { code: Code } };`);
    printer.name(type('Code'), 'Code');
    expect(oneLine(printer.printStructure(type('T'), 'T'))).toBe('{ a: string; b: { code: Code; }; }');
  });

  it('declares a recursive type once and refers to it by name inside itself', () => {
    const { type, printer } = typesOf(`
      interface Node { name: string; children: Node[] }
      export type T = { root: Node };`);
    expect(oneLine(printer.printStructure(type('T'), 'T'))).toBe('{ root: Node; }');
    expect(printer.declarations.map(oneLine)).toEqual(['type Node = { name: string; children: Node[]; };']);
  });

  it.each([
    ['a function', 'export type T = { run: () => void };', 'T.run: a function type'],
    [
      'an object with methods (a class instance of a library)',
      'class Conn { query(): void {} } export type T = { conn: Conn };',
      'T.conn.query: a function type',
    ],
    ['a symbol-keyed property', 'const k = Symbol(); export type T = { [k]: string };', 'T: a symbol-keyed property'],
    ['a type parameter', 'export interface Box<V> { value: V } export type T<V> = Box<V>;', 'cannot print V'],
  ])('refuses %s, naming where it is', (_what, source, message) => {
    const { type, printer } = typesOf(source);
    const target = type('T');
    expect(() => printer.printStructure(target, 'T')).toThrow(TypePrintError);
    expect(() => printer.printStructure(target, 'T')).toThrow(message);
  });
});
