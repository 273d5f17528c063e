// Time as the subject of a test (an expiry, a grace period, a window), without waiting for it to pass.
//
// The apps of most tests run in this process (tests/helpers/app.ts), and the code under test reads the
// clock with Date (`new Date()`, `Date.now()`: token lifetimes, rate-limit windows, grace periods). For
// that code, `clockAhead` moves the clock forward with vitest's fake timers: Date only (timers, I/O and
// performance.now() stay real, so the app, pg and HTTP go on as usual), ahead by the amount asked and
// still running. Where the clock is elsewhere (Postgres' now(), Redis' TTLs, another process), a test moves
// that clock instead (rows written back in time) or, as a last resort, waits with a comment saying why.
import { vi } from 'vitest';
import { waitFor } from './wait.js';

/**
 * Runs `fn` with Date `ms` ahead of the real clock (and running: it advances with real time in steps of a
 * few ms), then puts the real clock back. What `fn` does is seen by the in-process code as happening `ms`
 * later.
 */
export async function clockAhead<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + ms, shouldAdvanceTime: true, advanceTimeDelta: 2 });
  try {
    return await fn();
  } finally {
    vi.useRealTimers();
  }
}

/**
 * Waits until Date.now() is past `ms` (by default: the current millisecond), so that a timestamp taken
 * afterwards, by this process or by Postgres on this machine, is strictly later than one taken before the
 * call. At most about a millisecond: a wait for the clock's next tick, not a fixed wait.
 */
export async function clockPast(ms = Date.now()): Promise<void> {
  await waitFor(() => Date.now() > ms, { interval: 1, message: `the clock to pass ${new Date(ms).toISOString()}` });
}
