// Answers checked against /openapi.json as a validating proxy or a fuzzer checks them: every answer the
// test client (http.ts) receives is recorded, and answersAgainst(doc) finds, for each, the operation of its
// method and path, the response of its status and that response's JSON schema, and validates the body
// with ajv (JSON Schema 2020-12, as OpenAPI 3.1 has it). An answer whose status the operation does not
// declare, or whose body its schema refuses, is a mismatch.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

export interface Answer {
  method: string;
  /** The path as sent, query included. */
  path: string;
  status: number;
  contentType: string | null;
  text: string;
}

/** Every answer the test client received in this file (one module graph per file). */
export const answers: Answer[] = [];

export function recordAnswer(answer: Answer) {
  answers.push(answer);
}

type Json = Record<string, any>;

interface Operation {
  method: string;
  template: string;
  pattern: RegExp;
  responses: Json;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const DOC_ID = 'https://openapi.document.invalid/openapi.json';

/** `$ref: '#/...'` of a part of the document, made to point into the document registered as DOC_ID. */
function rebased(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(rebased);
  if (!schema || typeof schema !== 'object') return schema;
  return Object.fromEntries(
    Object.entries(schema).map(([k, v]) => [
      k,
      k === '$ref' && typeof v === 'string' && v.startsWith('#') ? `${DOC_ID}${v}` : rebased(v),
    ]),
  );
}

/** The checker of `doc`'s responses. */
export function answersAgainst(doc: Json) {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats.default(ajv);
  ajv.addSchema({ $id: DOC_ID, components: doc.components ?? {} });

  const operations: Operation[] = Object.entries(doc.paths as Json).flatMap(([template, item]) =>
    Object.entries(item as Json)
      .filter(([m]) => METHODS.includes(m))
      .map(([method, op]) => ({
        method: method.toUpperCase(),
        template,
        // Each {param} one segment; static paths are tried before parameter paths (as the router does).
        pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
        responses: (op as Json).responses ?? {},
      })),
  );
  const staticFirst = [...operations].sort(
    (a, b) => Number(a.template.includes('{')) - Number(b.template.includes('{')),
  );
  const validators = new Map<string, ValidateFunction>();

  const operationOf = (method: string, path: string) =>
    staticFirst.find((o) => o.method === method && o.pattern.test(path.split('?')[0]));

  function responseOf(op: Operation, status: number): Json | undefined {
    const r = op.responses[String(status)] ?? op.responses[`${String(status)[0]}XX`] ?? op.responses.default;
    if (r?.$ref) return doc.components.responses[r.$ref.split('/').pop()];
    return r;
  }

  return {
    /** The operation template an answer is of, or undefined (an unknown route). */
    templateOf: (a: Pick<Answer, 'method' | 'path'>) => operationOf(a.method, a.path)?.template,

    /** What is wrong with an answer, or undefined; answers of paths the document does not have are left alone. */
    check(a: Answer): string | undefined {
      const op = operationOf(a.method, a.path);
      if (!op) return undefined;
      const where = `${a.method} ${op.template} ${a.status}`;
      const response = responseOf(op, a.status);
      if (!response) return `${where}: the status is not declared`;
      if (!a.contentType?.startsWith('application/json')) return undefined;
      const schema = response.content?.['application/json']?.schema;
      if (!schema) return `${where}: a JSON answer, but the document declares no JSON content`;
      const key = `${op.method} ${op.template} ${a.status}`;
      let validate = validators.get(key);
      if (!validate) {
        validate = ajv.compile(rebased(schema) as Json);
        validators.set(key, validate);
      }
      let body: unknown;
      try {
        body = a.text === '' ? undefined : JSON.parse(a.text);
      } catch {
        return `${where}: the body is not JSON`;
      }
      if (validate(body)) return undefined;
      const errors = (validate.errors ?? [])
        .slice(0, 5)
        .map((e) => `${e.instancePath || '(body)'} ${e.message ?? ''}`)
        .join('; ');
      return `${where}: ${errors}`;
    },
  };
}
