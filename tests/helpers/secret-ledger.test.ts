import { describe, expect, it } from 'vitest';
import { SecretLedger } from './secret-ledger.js';

// The ledger guards every other file; these prove it can fail.
describe('SecretLedger', () => {
  it('reports a sent secret that comes back later, with where', () => {
    const l = new SecretLedger();
    l.sent('Sup3r-secret-pw', 'body.password');
    l.observe('POST /auth/login', '{"echo":"Sup3r-secret-pw"}');
    expect(l.leaks()).toEqual(['body.password came back in POST /auth/login']);
  });

  it('ignores what was seen before the secret was sent (a token first issued by the server)', () => {
    const l = new SecretLedger();
    l.observe('POST /auth/login', '{"accessToken":"eyJ-issued-token"}');
    l.sent('eyJ-issued-token', 'a bearer token');
    expect(l.leaks()).toEqual([]);
  });

  it('does not count the mock mail log, whose purpose is to show links', () => {
    const l = new SecretLedger();
    l.sent('reset-token-123456', 'body.token');
    l.observe('GET /admin/email-logs', 'https://x/reset-password?token=reset-token-123456');
    expect(l.leaks()).toEqual([]);
  });

  it('knows the 2FA secrets the service hands out once: any later answer carrying one is a leak', () => {
    const l = new SecretLedger();
    l.observe('POST /auth/mfa/totp/setup', '{"secret":"JBSWY3DPEHPK3PXPJBSWY3DP"}');
    l.sent('JBSWY3DPEHPK3PXPJBSWY3DP', 'a TOTP secret');
    l.observe('GET /auth/me', '{"secret":"JBSWY3DPEHPK3PXPJBSWY3DP"}');
    expect(l.leaks()).toEqual(['a TOTP secret came back in GET /auth/me']);
  });
});
