// Two-factor sign-in as a user does it: an authenticator (otpauth, from the secret the setup answered)
// computes the codes; setup and confirmation go over HTTP.
import * as OTPAuth from 'otpauth';
import type { TestApp } from './app.js';
import type { Api } from './http.js';
import { waitFor } from './wait.js';

export const STEP_MS = 30_000;

/** The authenticator app of `secret`: RFC 6238, SHA-1, 6 digits, 30 s. */
export const authenticator = (secret: string) =>
  new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });

/** The code `steps` time steps from now (-1: the previous step, 1: the next). */
export const codeAt = (secret: string, steps = 0) =>
  authenticator(secret).generate({ timestamp: Date.now() + steps * STEP_MS });

/**
 * Waits, if need be, for a time step with at least `marginMs` left, so that "the previous / next step"
 * computed now is still that when the service checks it. A wait for an event of the clock (the next step
 * begins), of at most `marginMs`, and none most of the time.
 */
export async function freshStep(marginMs = 8_000) {
  await waitFor(() => STEP_MS - (Date.now() % STEP_MS) >= marginMs, {
    timeout: marginMs + 1_000,
    interval: 10,
    message: `a time step with ${marginMs} ms left`,
  });
}

export interface Enabled {
  secret: string;
  backupCodes: string[];
}

/** Sets up and confirms 2FA for the holder of `token` (the confirmation uses the current step's code). */
export async function enableMfa(api: Api, token: string): Promise<Enabled> {
  const setup = await api('POST', '/auth/mfa/totp/setup', { token });
  if (setup.status !== 200) throw new Error(`setup failed: ${setup.status} ${setup.text}`);
  const secret: string = setup.body.secret;
  await freshStep(3_000);
  const confirm = await api('POST', '/auth/mfa/totp/confirm', { token, body: { code: codeAt(secret) } });
  if (confirm.status !== 200) throw new Error(`confirm failed: ${confirm.status} ${confirm.text}`);
  return { secret, backupCodes: confirm.body.backupCodes };
}

/**
 * Forgets which time steps the user's codes were accepted at: what 30 seconds of waiting would do, for
 * tests that use several TOTP codes in a row.
 */
export async function forgetUsedSteps(app: TestApp, userId: string) {
  await app.deps.db.updateTable('user_totp').set({ last_used_step: null }).where('user_id', '=', userId).execute();
}

/** Signs in with the password, then the second factor; answers the session's answer. */
export async function loginWithMfa(
  api: Api,
  email: string,
  password: string,
  factor: { code: string } | { backupCode: string },
) {
  const first = await api('POST', '/auth/login', { body: { email, password } });
  if (first.status !== 200 || !first.body.mfaRequired) throw new Error(`login: ${first.status} ${first.text}`);
  return api('POST', '/auth/mfa/verify', { body: { mfaToken: first.body.mfaToken, ...factor } });
}
