// Every error answer of a REST route that a test file's apps gave, from their request log lines (route
// template, status, error code). tests/helpers/error-ledger-check.ts checks them against /openapi.json at
// the end of the file: the status must be documented for the operation, with the code among its codes.
// So the document lists the errors clients really get, and a new error path cannot go undocumented.
// One ledger per test file (vitest isolates the module graph of each file).
import fs from 'node:fs';
import { codesOf } from '../../server/platform/error-response.js';

interface ErrorAnswer {
  method: string;
  route: string;
  status: number;
  code: string | null;
}

type Operation = { responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> };

/** ERROR_LEDGER_RECORD=<file>: append every error answer to that file as a JSON line instead of checking. */
const RECORD_TO = process.env.ERROR_LEDGER_RECORD;

export class ErrorLedger {
  private readonly seen = new Map<string, ErrorAnswer>();

  /** A log line of a test app; request lines of error answers on a REST route are kept. */
  observe(line: string) {
    if (!line.includes('"route":')) return;
    const entry = JSON.parse(line) as Partial<ErrorAnswer>;
    const { method, route, status } = entry;
    if (!method || !route?.startsWith('/') || route.startsWith('/trpc/') || !status || status < 400) return;
    const answer = { method, route, status, code: entry.code ?? null };
    const key = `${method} ${route} ${status} ${answer.code}`;
    if (this.seen.has(key)) return;
    this.seen.set(key, answer);
    if (RECORD_TO) fs.appendFileSync(RECORD_TO, `${JSON.stringify(answer)}\n`);
  }

  /** The error answers /openapi.json does not list, one sentence each. */
  async undocumented(): Promise<string[]> {
    if (RECORD_TO || this.seen.size === 0) return [];
    // Loaded only here: a test file that started no app does not load the routers for nothing.
    const [{ appRouter }, { apiDocument }, { plainRoutePaths }] = await Promise.all([
      import('../../routers/index.js'),
      import('../../openapi/routes.js'),
      import('../../server/app.js'),
    ]);
    const paths = apiDocument(appRouter, 'test', plainRoutePaths).paths as Record<string, Record<string, Operation>>;
    const found: string[] = [];
    for (const { method, route, status, code } of this.seen.values()) {
      const op = paths[route]?.[method.toLowerCase()];
      // Routes outside the document (the docs UI, /openapi.json itself) have nothing to check against.
      if (!op) continue;
      const response = op.responses?.[String(status)];
      const documented = codesOf(response);
      // A status documented with another body than the Error schema (GET /health's 503) has no code.
      if (code === null && response && documented.length === 0) continue;
      if (code === null) found.push(`${method} ${route} answered ${status} without an error code`);
      else if (!documented.includes(code))
        found.push(
          `${method} ${route} answered ${status} ${code}, which /openapi.json does not list (it lists ${documented.join(', ') || 'nothing'} for ${status})`,
        );
    }
    return found;
  }
}

export const errorLedger = new ErrorLedger();
