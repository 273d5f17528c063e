// What a front end writes with the client: typed inputs and outputs, typed errors.
import {
  createApiClient,
  isApiError,
  isMfaChallenge,
  localStorageTokens,
  type ApiError,
  type ApiErrorCode,
  type AppRouter,
  type ErrorCode,
  type RouterInputs,
  type RouterOutputs,
} from '@workspace-saas/client';
import type { TRPCClientError } from '@trpc/client';
import type { inferRouterError } from '@trpc/server';

export const api = createApiClient({
  baseUrl: 'https://api.example.com',
  storage: localStorageTokens(),
  onSessionEnd: (reason) => location.assign(`/sign-in?reason=${reason.code}`),
});

/** Registers, then signs in; answers the new user's id or what to show under the form. */
export async function signUp(
  input: RouterInputs['auth']['register'],
): Promise<{ userId: string } | { problem: string }> {
  try {
    const { user } = await api.auth.register.mutate(input);
    const signedIn = await api.session.signIn(input.email, input.password);
    if (isMfaChallenge(signedIn)) return { problem: 'two-factor sign-in is on: enter a code' };
    const sameUser: boolean = signedIn.user.id === user.id;
    return sameUser ? { userId: user.id } : { problem: 'signed in as someone else' };
  } catch (err) {
    if (isApiError(err, 'EMAIL_TAKEN')) {
      const code: 'EMAIL_TAKEN' = err.code;
      return { problem: `${code}: ${err.message} (request ${err.requestId ?? '-'})` };
    }
    if (isApiError(err, 'WEAK_PASSWORD', 'BAD_REQUEST')) {
      return { problem: err.issues.map((issue) => `${issue.path}: ${issue.message}`).join('\n') };
    }
    // @ts-expect-error a misspelled code is no ErrorCode
    if (isApiError(err, 'EMAIL_TAKN')) return { problem: 'never' };
    throw err;
  }
}

/** The sign-in buttons, and the web app's page /auth/callback?code=...&redirectTo=... (or ?error=CODE). */
export async function providerButtons(): Promise<Array<{ label: string; href: string }>> {
  const { items } = await api.oauth.providers.query();
  return items.map((p) => ({
    label: `Continue with ${p.name}`,
    href: api.session.providerSignInUrl(p.id, '/dashboard'),
  }));
}

export async function onAuthCallback(params: URLSearchParams): Promise<string> {
  const code = params.get('code');
  if (!code) return `/sign-in?error=${params.get('error') ?? 'UNKNOWN'}`;
  const result: RouterOutputs['oauth']['exchange'] = await api.session.signInWithCode(code);
  // Two-factor sign-in on: keep the token in memory (never in the URL) and ask for a code.
  if (isMfaChallenge(result)) {
    pendingMfaToken = result.mfaToken;
    return '/sign-in/two-factor';
  }
  return result.hasActiveWorkspace ? (params.get('redirectTo') ?? '/dashboard') : '/workspaces/new';
}

let pendingMfaToken: string | undefined;

/** The two-factor page: a code of the authenticator app, or a backup code. */
export async function submitSecondFactor(input: { code: string } | { backupCode: string }): Promise<string> {
  if (!pendingMfaToken) return '/sign-in';
  try {
    const signedIn = await api.session.verifyMfa(pendingMfaToken, input);
    pendingMfaToken = undefined;
    return signedIn.hasActiveWorkspace ? '/dashboard' : '/workspaces/new';
  } catch (err) {
    if (isApiError(err, 'INVALID_MFA_CODE')) return '/sign-in/two-factor?error=code';
    pendingMfaToken = undefined;
    return '/sign-in';
  }
}

/** The security settings: my sessions, newest use first, this device marked. */
export async function sessionList(): Promise<string[]> {
  const { items } = await api.auth.sessions.query();
  return items.map(
    (s) => `${s.userAgent ?? 'unknown device'} (${s.ipAddress ?? '?'})${s.current ? ' - this device' : ''}`,
  );
}

type Me = RouterOutputs['auth']['me'];

export async function greeting(): Promise<string> {
  const me: Me = await api.auth.me.query();
  const workspace = me.activeWorkspace ? `${me.activeWorkspace.name} (${me.activeWorkspace.role})` : 'no workspace';
  return `Hello ${me.user.name}, ${workspace}`;
}

export async function renameWorkspace(workspaceId: string, name: string) {
  const renamed = await api.workspaces.update.mutate({ workspaceId, name });
  return renamed.name;
}

// @ts-expect-error login needs a password
export const incomplete: RouterInputs['auth']['login'] = { email: 'ada@example.com' };

export async function unknownProcedure() {
  // @ts-expect-error no such procedure
  await api.auth.noSuchProcedure.query();
}

/** Every code has a message: a new code of the service fails this file's compilation until it has one. */
const MESSAGES = {} as Record<ApiErrorCode, string>;

export function describe(err: unknown): string {
  if (!isApiError(err)) return 'Something went wrong.';
  switch (err.code) {
    case 'NETWORK_ERROR':
      return 'You seem to be offline.';
    case 'INVALID_CREDENTIALS':
      return 'Wrong e-mail or password.';
    case 'RATE_LIMITED':
      return `Too many attempts (HTTP ${err.status}).`;
    default:
      return MESSAGES[err.code];
  }
}

/** tRPC's own error type carries the service's codes too. */
export function isWrongPassword(err: TRPCClientError<AppRouter>): boolean {
  const requestId: string | undefined = err.data?.requestId;
  return err.data?.code === 'INVALID_CREDENTIALS' && requestId !== undefined;
}

export type ShapeCode = inferRouterError<AppRouter>['data']['code'];
export const sameCodes: ShapeCode extends ErrorCode ? (ErrorCode extends ShapeCode ? true : false) : false = true;
export type AnyApiError = ApiError;
