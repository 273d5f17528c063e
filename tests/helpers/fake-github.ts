// A local stand-in for GitHub's OAuth endpoints and user API, as a real HTTP server the service reaches
// through GITHUB_BASE_URL and GITHUB_API_URL (both this server's origin):
//   GET  /login/oauth/authorize     "the user approves" as `signInAs` (or refuses): 302 to redirect_uri
//   POST /login/oauth/access_token  the code for a token: client secret, redirect_uri and PKCE (S256) checked
//   GET  /user, GET /user/emails     the user behind the token
// Like GitHub, a refused token request answers 200 with `{ error }`, and a code is good once.
import crypto from 'node:crypto';
import http from 'node:http';
import { closeHttpServer, json, listenOnLoopback, readBody } from './fake-openai.js';

export interface GitHubAccount {
  id: number;
  login: string;
  name: string | null;
  /** The public profile address. */
  email: string | null;
  emails: Array<{ email: string; primary: boolean; verified: boolean }>;
}

interface IssuedCode {
  login: string;
  clientId: string;
  redirectUri: string;
  challenge: string | null;
  used: boolean;
}

export interface FakeGitHub {
  url: string;
  clientId: string;
  clientSecret: string;
  accounts: Map<string, GitHubAccount>;
  /** Who approves at the next authorization: a login of `accounts`, or 'deny' to refuse. */
  signInAs(login: string): void;
  /** Every request, as `METHOD /path` (queries and bodies are not kept: they hold codes). */
  requests: string[];
  close(): Promise<void>;
}

/** A GitHub account with one primary address, registered with the fake. */
export function githubAccount(fake: FakeGitHub, email: string, opts: { verified?: boolean; name?: string } = {}) {
  // Random: test files run in parallel against one database, where an id is an identity's subject.
  const id = crypto.randomInt(1, 2 ** 47);
  const account: GitHubAccount = {
    id,
    login: `octo-${id}`,
    name: opts.name ?? 'Octo Cat',
    email: null,
    emails: [{ email, primary: true, verified: opts.verified ?? true }],
  };
  fake.accounts.set(account.login, account);
  return account;
}

const s256 = (verifier: string) => crypto.createHash('sha256').update(verifier).digest('base64url');

export async function startFakeGitHub(): Promise<FakeGitHub> {
  const clientId = `gh-client-${crypto.randomBytes(4).toString('hex')}`;
  const clientSecret = `gh-secret-${crypto.randomBytes(16).toString('hex')}`;
  const accounts = new Map<string, GitHubAccount>();
  const codes = new Map<string, IssuedCode>();
  const tokens = new Map<string, string>();
  const requests: string[] = [];
  let approver: string = 'deny';

  const server = http.createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      requests.push(`${req.method} ${url.pathname}`);
      if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') {
        const redirectUri = url.searchParams.get('redirect_uri') ?? '';
        const back = new URL(redirectUri);
        const state = url.searchParams.get('state');
        if (url.searchParams.get('client_id') !== clientId) return json(res, 404, { message: 'Not Found' });
        if (approver === 'deny') {
          back.searchParams.set('error', 'access_denied');
          back.searchParams.set('error_description', 'The user has denied your application access.');
        } else {
          const code = crypto.randomBytes(10).toString('hex');
          codes.set(code, {
            login: approver,
            clientId,
            redirectUri,
            challenge:
              url.searchParams.get('code_challenge_method') === 'S256' ? url.searchParams.get('code_challenge') : null,
            used: false,
          });
          back.searchParams.set('code', code);
        }
        if (state !== null) back.searchParams.set('state', state);
        res.writeHead(302, { location: back.href });
        return res.end();
      }
      if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
        const form = new URLSearchParams(await readBody(req));
        let [id, secret] = [form.get('client_id'), form.get('client_secret')];
        const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
        if (basic) [id, secret] = Buffer.from(basic[1], 'base64').toString().split(':').map(decodeURIComponent);
        const issued = codes.get(form.get('code') ?? '');
        const verifier = form.get('code_verifier');
        const refuse = (error: string) => json(res, 200, { error, error_description: error.replace(/_/g, ' ') });
        if (id !== clientId || secret !== clientSecret) return refuse('incorrect_client_credentials');
        if (!issued || issued.used || issued.clientId !== id) return refuse('bad_verification_code');
        if (form.get('redirect_uri') !== issued.redirectUri) return refuse('redirect_uri_mismatch');
        if (issued.challenge && (!verifier || s256(verifier) !== issued.challenge))
          return refuse('bad_verification_code');
        issued.used = true;
        const token = `gho_${crypto.randomBytes(18).toString('hex')}`;
        tokens.set(token, issued.login);
        return json(res, 200, { access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
      }
      if (req.method === 'GET' && (url.pathname === '/user' || url.pathname === '/user/emails')) {
        const token = /^(?:Bearer|token) (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
        const account = accounts.get(tokens.get(token ?? '') ?? '');
        if (!account) return json(res, 401, { message: 'Bad credentials' });
        if (url.pathname === '/user/emails') return json(res, 200, account.emails);
        return json(res, 200, { id: account.id, login: account.login, name: account.name, email: account.email });
      }
      json(res, 404, { message: 'Not Found' });
    })().catch(() => {
      res.statusCode = 500;
      res.end();
    });
  });

  return {
    url: await listenOnLoopback(server),
    clientId,
    clientSecret,
    accounts,
    signInAs: (login) => {
      approver = login;
    },
    requests,
    close: () => closeHttpServer(server),
  };
}
