// SCIM filters (RFC 7644 3.4.2.2) to SQL: scim2-parse-filter reads the text into a tree, and this file
// compiles the tree into one SQL condition over the attributes a resource declares, so Postgres filters
// and pages (indexes included), never the rows in memory. An attribute the resource does not declare, a
// value of the wrong type or a text that does not parse is a 400 invalidFilter.
import { sql, type RawBuilder } from 'kysely';
import { parse, type Filter } from 'scim2-parse-filter';
import { ScimError } from './errors.js';

export type AttributeType = 'string' | 'caseExactString' | 'boolean' | 'dateTime';

export interface Attribute {
  /** The SQL expression of the attribute. */
  column: RawBuilder<unknown>;
  type: AttributeType;
  /** Stored in lower case already (addresses): `eq` compares the column itself, so its index serves. */
  storedLowerCase?: boolean;
  /**
   * A multi-valued attribute kept in rows of another table (a Group's members): the condition over
   * `column` holds when some row does, `exists (...)` around it.
   */
  some?: (condition: RawBuilder<boolean>) => RawBuilder<boolean>;
}

/** Attributes by lower-cased path (`username`, `emails.value`, `meta.lastmodified`). */
export type Attributes = Record<string, Attribute>;

const invalidFilter = (detail: string) => new ScimError(400, detail, 'invalidFilter');

/** The longest filter text read: a directory's filters are short, and the parser is recursive. */
const MAX_FILTER_LENGTH = 2_000;

export function parseFilter(text: string): Filter {
  if (text.length > MAX_FILTER_LENGTH) throw invalidFilter(`A filter is at most ${MAX_FILTER_LENGTH} characters.`);
  try {
    return parse(text);
  } catch {
    throw invalidFilter(`The filter does not parse: ${text.slice(0, 200)}`);
  }
}

/** `text` with LIKE's wildcards and escape character taken literally. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

function attributeOf(attributes: Attributes, path: string): Attribute {
  // A fully qualified path (urn:...:User:userName) names the core attribute.
  const short = path.replace(/^urn:ietf:params:scim:schemas:core:2\.0:(?:User|Group):/i, '');
  const attr = attributes[short.toLowerCase()];
  if (!attr) throw invalidFilter(`Filtering on "${path}" is not supported.`);
  return attr;
}

function booleanOf(value: unknown, path: string): boolean {
  if (typeof value === 'boolean') return value;
  // Some directories send booleans as strings ("True", "False").
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  throw invalidFilter(`${path} compares with true or false.`);
}

function dateOf(value: unknown, path: string): Date {
  const date = typeof value === 'string' ? new Date(value) : undefined;
  if (!date || Number.isNaN(date.getTime())) throw invalidFilter(`${path} compares with a date-time (RFC 3339).`);
  return date;
}

const COMPARISONS = { eq: '=', ne: '<>', gt: '>', ge: '>=', lt: '<', le: '<=' } as const;

function compare(
  attr: Attribute,
  path: string,
  op: 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'lt' | 'ge' | 'le',
  value: unknown,
): RawBuilder<boolean> {
  const { column } = attr;
  if (value === null) {
    if (op === 'eq') return sql<boolean>`(${column} is null)`;
    if (op === 'ne') return sql<boolean>`(${column} is not null)`;
    throw invalidFilter(`${op} does not compare with null.`);
  }
  if (attr.type === 'boolean') {
    if (op !== 'eq' && op !== 'ne') throw invalidFilter(`${path} is a boolean: use eq or ne.`);
    return sql<boolean>`(${column} ${sql.raw(COMPARISONS[op])} ${booleanOf(value, path)})`;
  }
  if (attr.type === 'dateTime') {
    if (op === 'co' || op === 'sw' || op === 'ew')
      throw invalidFilter(`${path} is a date-time: use eq, ne, gt, ge, lt or le.`);
    return sql<boolean>`(${column} ${sql.raw(COMPARISONS[op])} ${dateOf(value, path)})`;
  }
  if (typeof value !== 'string') throw invalidFilter(`${path} compares with a string.`);
  const exact = attr.type === 'caseExactString';
  // Case-insensitive attributes (RFC 7643: caseExact false) compare lower case with lower case.
  const left = exact || attr.storedLowerCase ? column : sql`lower(${column})`;
  const right = exact ? value : value.toLowerCase();
  switch (op) {
    case 'co':
      return sql<boolean>`(${left} like ${`%${likeLiteral(right)}%`})`;
    case 'sw':
      return sql<boolean>`(${left} like ${`${likeLiteral(right)}%`})`;
    case 'ew':
      return sql<boolean>`(${left} like ${`%${likeLiteral(right)}`})`;
    default:
      return sql<boolean>`(${left} ${sql.raw(COMPARISONS[op])} ${right})`;
  }
}

const someOf = (attr: Attribute, condition: RawBuilder<boolean>) => (attr.some ? attr.some(condition) : condition);

/**
 * The SQL condition of a parsed filter over `attributes`. A value path (`emails[type eq "work"]`) is read
 * as its filter over the sub-attributes (`emails.type`), which holds for single-valued stores such as this
 * service's one address per member.
 */
export function compileFilter(filter: Filter, attributes: Attributes, prefix = ''): RawBuilder<boolean> {
  switch (filter.op) {
    case 'and':
    case 'or': {
      const parts = filter.filters.map((f) => compileFilter(f, attributes, prefix));
      return sql<boolean>`(${sql.join(parts, sql.raw(` ${filter.op} `))})`;
    }
    case 'not':
      return sql<boolean>`(not coalesce(${compileFilter(filter.filter, attributes, prefix)}, false))`;
    case '[]':
      return compileFilter(filter.valFilter, attributes, `${prefix}${filter.attrPath}.`);
    case 'pr': {
      const path = prefix + filter.attrPath;
      const attr = attributeOf(attributes, path);
      return someOf(
        attr,
        attr.type === 'string' || attr.type === 'caseExactString'
          ? sql<boolean>`(${attr.column} is not null and ${attr.column} <> '')`
          : sql<boolean>`(${attr.column} is not null)`,
      );
    }
    case 'eq':
    case 'ne':
    case 'co':
    case 'sw':
    case 'ew':
    case 'gt':
    case 'lt':
    case 'ge':
    case 'le': {
      const path = prefix + filter.attrPath;
      const attr = attributeOf(attributes, path);
      return someOf(attr, compare(attr, path, filter.op, filter.compValue));
    }
    default:
      throw invalidFilter(`Unknown filter operator "${(filter as { op: string }).op}".`);
  }
}
