// The one way a test waits: for an event it can observe, never for a length of time.
//
// `waitFor` calls `condition` every `interval` ms until it answers a truthy value, and answers that value. A
// condition that throws (an `expect` that does not hold yet, a row not there yet) counts as "not yet". After
// `timeout` ms it throws an error naming what was awaited with the last value or error, e.g. "waitFor: timed
// out after 10003 ms (412 tries) waiting for delivery 1f0c... to be success; last value: undefined", not a
// bare timeout. Polling every few ms is waiting for an event by observation: the test goes on as soon as the
// thing happened, however fast or slow the machine is.
//
// A "nothing happened" assertion first waits (with waitFor) for a LATER thing that went through the same
// path, then checks that the earlier thing did not happen: a slow machine cannot make it pass by accident.
//
// Where time itself is the subject (an expiry, a Retry-After), use a short TTL in the app's settings, fake
// timers when the clock is in this process (clock.ts), or move the clock in the database. `sleep` is for the
// few cases left (named so that the project's count of fixed waits finds every call), each with a comment
// saying why.
import { inspect } from 'node:util';

export interface WaitOptions {
  /** How long to wait before failing, in ms (default 10000). */
  timeout?: number;
  /** How often to call the condition, in ms (default 20). */
  interval?: number;
  /** What is awaited, for the error (default: the condition's source, shortened). */
  message?: string;
}

type Falsy = false | 0 | '' | null | undefined;

export class WaitTimeoutError extends Error {
  constructor(
    message: string,
    readonly lastValue: unknown,
    readonly lastError: unknown,
  ) {
    super(message);
    this.name = 'WaitTimeoutError';
  }
}

const show = (v: unknown) => inspect(v, { depth: 4, breakLength: Infinity, maxStringLength: 500 });

/** Calls `condition` until it answers a truthy value (answered); throws a readable error after `timeout`. */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  { timeout = 10_000, interval = 20, message }: WaitOptions = {},
): Promise<Exclude<T, Falsy>> {
  const started = Date.now();
  let lastValue: unknown;
  let lastError: unknown;
  let calls = 0;
  for (;;) {
    calls++;
    try {
      const value = await condition();
      if (value) return value as Exclude<T, Falsy>;
      lastValue = value;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() - started >= timeout) {
      const what = message ?? String(condition).replace(/\s+/g, ' ').slice(0, 160);
      const last =
        lastError !== undefined
          ? `last error: ${lastError instanceof Error ? lastError.message : show(lastError)}`
          : `last value: ${show(lastValue)}`;
      throw new WaitTimeoutError(
        `waitFor: timed out after ${Date.now() - started} ms (${calls} tries) waiting for ${what}; ${last}`,
        lastValue,
        lastError,
      );
    }
    // Not a fixed wait: the pause between two looks at the condition.
    await new Promise<void>((wake) => setTimeout(wake, interval));
  }
}

/**
 * A wait of a fixed length. Not for waiting for something to happen (use waitFor): only where the length
 * of time is itself the subject and no fake clock can reach it. Every caller says why in a comment.
 */
export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** Whether `condition` holds within `timeout` ms (waitFor's answer, or false once it timed out). */
export async function holdsWithin(condition: () => unknown, timeout: number, interval = 20): Promise<boolean> {
  try {
    await waitFor(condition, { timeout, interval });
    return true;
  } catch (err) {
    if (err instanceof WaitTimeoutError) return false;
    throw err;
  }
}
