import { describe, expect, it } from 'vitest';
import { ErrorLedger } from './error-ledger.js';

/** A request log line as server/platform/http.ts writes it. */
const line = (method: string, route: string, status: number, code?: string | null) =>
  JSON.stringify({
    level: status >= 500 ? 50 : 30,
    requestId: 'r',
    method,
    url: route,
    route,
    status,
    code,
    msg: `${method} ${status}`,
  });

// The ledger guards every other file; these prove it can fail.
describe('ErrorLedger', () => {
  it('reports an error answer whose code /openapi.json does not list for that route and status', async () => {
    const l = new ErrorLedger();
    l.observe(line('POST', '/auth/register', 409, 'INVALID_STATE'));
    l.observe(line('GET', '/health', 429, 'RATE_LIMITED'));
    expect(await l.undocumented()).toEqual([
      'POST /auth/register answered 409 INVALID_STATE, which /openapi.json does not list (it lists EMAIL_TAKEN, IDEMPOTENCY_KEY_IN_USE for 409)',
      'GET /health answered 429 RATE_LIMITED, which /openapi.json does not list (it lists nothing for 429)',
    ]);
  });

  it('reports an error answer that carries no code', async () => {
    const l = new ErrorLedger();
    l.observe(line('GET', '/auth/me', 401, null));
    expect(await l.undocumented()).toEqual(['GET /auth/me answered 401 without an error code']);
  });

  it('accepts documented answers, and leaves out successes, /trpc calls, unmatched paths and other log lines', async () => {
    const l = new ErrorLedger();
    l.observe(line('POST', '/auth/register', 409, 'EMAIL_TAKEN'));
    l.observe(line('GET', '/workspaces/{workspaceId}', 404, 'NOT_FOUND'));
    l.observe(line('GET', '/health', 503, null)); // its 503 is its own body, not an error
    l.observe(line('GET', '/auth/me', 200));
    l.observe(line('GET', '/trpc/auth.me', 401, 'UNAUTHORIZED'));
    l.observe(line('GET', '(unmatched)', 404, 'NOT_FOUND'));
    l.observe(JSON.stringify({ level: 30, msg: 'listening' }));
    expect(await l.undocumented()).toEqual([]);
  });
});
