// Runs after every test file: no password or token the file sent may appear in a later response body or
// log line (spec: secrets never appear in responses or logs).
import { afterAll, expect } from 'vitest';
import { ledger } from './secret-ledger.js';

afterAll(() => {
  expect(ledger.leaks(), 'secrets sent by this test file came back').toEqual([]);
});
