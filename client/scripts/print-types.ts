// Prints a type of the service as TypeScript text that names nothing of the service: objects, unions,
// literals and arrays are written out structurally, only the standard library's types (Date) are named.
// What cannot be data sent as JSON (a function, a class instance of a library, a type parameter) fails the
// build with the path to it, rather than leaking a name the client's users cannot resolve.
import ts from 'typescript';

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const MAX_DEPTH = 64;

export class TypePrintError extends Error {
  override name = 'TypePrintError';
}

export class TypePrinter {
  /** Types printed by name (the exported aliases), in place of their structure. */
  private readonly named = new Map<ts.Type, string>();
  /** Types met again inside themselves: printed once as a declaration, by name elsewhere. */
  private readonly recursive = new Map<ts.Type, string>();
  private readonly inProgress: ts.Type[] = [];
  private readonly usedNames = new Set<string>();
  /** Declarations of recursive types, emitted beside the printed types. */
  readonly declarations: string[] = [];

  constructor(
    private readonly checker: ts.TypeChecker,
    private readonly program: ts.Program,
  ) {}

  /** From now on `type` is printed as `name`. */
  name(type: ts.Type, name: string) {
    this.named.set(type, name);
    this.usedNames.add(name);
  }

  /** The structure of `type` (never its own name), `where` naming it in errors. */
  printStructure(type: ts.Type, where: string): string {
    return this.print(type, where, 0, true);
  }

  /** `type`, by name when it is one of the named types. */
  print(type: ts.Type, where: string, indent = 0, structure = false): string {
    const named = structure ? undefined : this.named.get(type);
    if (named) return named;
    if (this.inProgress.length > MAX_DEPTH)
      throw new TypePrintError(`${where}: type nested deeper than ${MAX_DEPTH} levels`);
    const f = type.flags;
    if (f & ts.TypeFlags.Any) return 'any';
    if (f & ts.TypeFlags.Unknown) return 'unknown';
    if (f & ts.TypeFlags.Never) return 'never';
    if (f & ts.TypeFlags.Void) return 'void';
    if (f & ts.TypeFlags.Undefined) return 'undefined';
    if (f & ts.TypeFlags.Null) return 'null';
    if (f & ts.TypeFlags.Boolean) return 'boolean';
    if (f & ts.TypeFlags.String) return 'string';
    if (f & ts.TypeFlags.Number) return 'number';
    if (f & ts.TypeFlags.BigInt) return 'bigint';
    if (f & ts.TypeFlags.NonPrimitive) return 'object';
    if (f & ts.TypeFlags.BooleanLiteral) return this.checker.typeToString(type);
    if (type.isStringLiteral()) return JSON.stringify(type.value);
    if (type.isNumberLiteral()) return String(type.value);
    if (f & ts.TypeFlags.BigIntLiteral) {
      const { negative, base10Value } = (type as ts.BigIntLiteralType).value;
      return `${negative ? '-' : ''}${base10Value}n`;
    }
    if (f & ts.TypeFlags.TemplateLiteral) return this.templateLiteral(type as ts.TemplateLiteralType, where, indent);
    if (f & (ts.TypeFlags.Union | ts.TypeFlags.Intersection | ts.TypeFlags.Object)) {
      const again = this.recursive.get(type);
      if (again) return again;
      if (this.inProgress.includes(type)) {
        const name = this.freshName(type);
        this.recursive.set(type, name);
        return name;
      }
      this.inProgress.push(type);
      try {
        const text = this.composite(type, where, indent);
        const name = this.recursive.get(type);
        if (!name) return text;
        this.declarations.push(`type ${name} = ${this.composite(type, where, 0)};`);
        return name;
      } finally {
        this.inProgress.pop();
      }
    }
    throw new TypePrintError(`${where}: cannot print ${this.describe(type)} (not a JSON value's type)`);
  }

  private composite(type: ts.Type, where: string, indent: number): string {
    if (type.isUnion()) return this.union(type, where, indent);
    if (type.isIntersection()) {
      // Objects joined by `&` are printed as the one object they make; a primitive with a brand keeps both.
      if (type.types.every((t) => t.flags & ts.TypeFlags.Object)) return this.object(type, where, indent);
      return type.types.map((t) => this.parenthesized(this.print(t, where, indent))).join(' & ');
    }
    return this.objectType(type as ts.ObjectType, where, indent);
  }

  private union(type: ts.UnionType, where: string, indent: number): string {
    const members = type.types.filter((t) => !(t.flags & ts.TypeFlags.BooleanLiteral));
    const booleans = type.types.filter((t) => t.flags & ts.TypeFlags.BooleanLiteral);
    const parts = members.map((t) => this.print(t, where, indent));
    if (booleans.length === 2) parts.push('boolean');
    else parts.push(...booleans.map((t) => this.checker.typeToString(t)));
    // null and undefined last, as people write them.
    const rank = (p: string) => (p === 'null' ? 1 : p === 'undefined' ? 2 : 0);
    return parts.sort((a, b) => rank(a) - rank(b)).join(' | ');
  }

  private objectType(type: ts.ObjectType, where: string, indent: number): string {
    const checker = this.checker;
    if (checker.isTupleType(type)) return this.tuple(type as ts.TupleTypeReference, where, indent);
    if (checker.isArrayType(type)) {
      const reference = type as ts.TypeReference;
      const [element] = checker.getTypeArguments(reference);
      const readonly = reference.target.symbol?.name === 'ReadonlyArray';
      const inner = this.print(element, `${where}[]`, indent);
      const simple = /^[\w$."]+$/.test(inner);
      if (readonly) return simple ? `readonly ${inner}[]` : `ReadonlyArray<${inner}>`;
      return simple ? `${inner}[]` : `Array<${inner}>`;
    }
    const library = this.libraryName(type, where, indent);
    if (library) return library;
    return this.object(type, where, indent);
  }

  /** A type of the standard library (Date, Map...), by name: the client's users have it too. */
  private libraryName(type: ts.ObjectType, where: string, indent: number): string | undefined {
    const symbol = type.aliasSymbol ?? type.symbol;
    if (!symbol || !(symbol.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.Class | ts.SymbolFlags.TypeAlias)))
      return undefined;
    const declarations = symbol.declarations ?? [];
    if (!declarations.some((d) => this.program.isSourceFileDefaultLibrary(d.getSourceFile()))) return undefined;
    // Record<K, V>, Partial<T> and the like are shapes, not names: written out by the caller.
    if (type.aliasSymbol) return undefined;
    const args =
      type.objectFlags & ts.ObjectFlags.Reference ? this.checker.getTypeArguments(type as ts.TypeReference) : [];
    return args.length ? `${symbol.name}<${args.map((a) => this.print(a, where, indent)).join(', ')}>` : symbol.name;
  }

  private tuple(type: ts.TupleTypeReference, where: string, indent: number): string {
    const target = type.target;
    const elements = this.checker.getTypeArguments(type).map((t, i) => {
      const flags = target.elementFlags[i];
      const text = this.print(t, `${where}[${i}]`, indent);
      if (flags & ts.ElementFlags.Rest) return `...${this.parenthesized(text)}[]`;
      if (flags & ts.ElementFlags.Optional) return `${this.parenthesized(text)}?`;
      return text;
    });
    return `${target.readonly ? 'readonly ' : ''}[${elements.join(', ')}]`;
  }

  private object(type: ts.Type, where: string, indent: number): string {
    const checker = this.checker;
    if (
      checker.getSignaturesOfType(type, ts.SignatureKind.Call).length ||
      checker.getSignaturesOfType(type, ts.SignatureKind.Construct).length
    ) {
      throw new TypePrintError(`${where}: a function type (${this.describe(type)}) cannot travel as JSON`);
    }
    const pad = '  '.repeat(indent + 1);
    const lines: string[] = [];
    for (const info of checker.getIndexInfosOfType(type)) {
      const key = this.print(info.keyType, `${where}[key]`, indent + 1);
      const value = this.print(info.type, `${where}[${key}]`, indent + 1);
      lines.push(`${pad}${info.isReadonly ? 'readonly ' : ''}[key: ${key}]: ${value};`);
    }
    for (const prop of checker.getPropertiesOfType(type)) {
      const name = prop.getName();
      if (name.startsWith('__@'))
        throw new TypePrintError(`${where}: a symbol-keyed property (${name}) cannot travel as JSON`);
      const key = IDENTIFIER.test(name) ? name : JSON.stringify(name);
      const optional = prop.flags & ts.SymbolFlags.Optional ? '?' : '';
      const declaration = prop.valueDeclaration ?? prop.declarations?.[0];
      const readonly =
        declaration && ts.getCombinedModifierFlags(declaration) & ts.ModifierFlags.Readonly ? 'readonly ' : '';
      const text = this.print(checker.getTypeOfSymbol(prop), `${where}.${name}`, indent + 1);
      lines.push(`${pad}${readonly}${key}${optional}: ${text};`);
    }
    if (!lines.length) return '{}';
    return `{\n${lines.join('\n')}\n${'  '.repeat(indent)}}`;
  }

  private templateLiteral(type: ts.TemplateLiteralType, where: string, indent: number): string {
    const escape = (text: string) => text.replace(/[`\\]|\$\{/g, (m) => `\\${m}`);
    let out = escape(type.texts[0]);
    type.types.forEach((t, i) => {
      out += `\${${this.print(t, where, indent)}}${escape(type.texts[i + 1])}`;
    });
    return `\`${out}\``;
  }

  private parenthesized(text: string) {
    return /^[\w$."[\]]+$/.test(text) ? text : `(${text})`;
  }

  private freshName(type: ts.Type): string {
    const base =
      [type.aliasSymbol?.name, type.symbol?.name].find((n) => n && IDENTIFIER.test(n) && !n.startsWith('__')) ??
      'Recursive';
    let name = base;
    for (let i = 2; this.usedNames.has(name); i++) name = `${base}${i}`;
    this.usedNames.add(name);
    return name;
  }

  private describe(type: ts.Type): string {
    const text = this.checker.typeToString(type, undefined, ts.TypeFormatFlags.NoTruncation);
    return text.length > 200 ? `${text.slice(0, 200)}...` : text;
  }
}
