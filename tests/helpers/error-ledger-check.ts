// Runs after every test file: every error answer the file's apps gave on a REST route is listed, with its
// code, for that operation in /openapi.json (tests/helpers/error-ledger.ts).
import { afterAll, expect } from 'vitest';
import { errorLedger } from './error-ledger.js';

afterAll(async () => {
  expect(await errorLedger.undocumented(), 'error answers missing from /openapi.json').toEqual([]);
});
