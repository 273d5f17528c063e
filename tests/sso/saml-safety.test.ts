// The safety rules of a SAML answer, one test each: every forged or
// misdirected answer lands in the web app with ?error=SSO_ASSERTION_INVALID (or SSO_DOMAIN_MISMATCH) and
// signs nobody in, creates no account and grants no membership. Answers are built and signed as a real
// identity provider does (tests/helpers/saml-idp.ts), then changed the way an attacker would.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { Browser } from '../helpers/browser.js';
import { exchange } from '../helpers/oauth.js';
import {
  ALG,
  assertionXml,
  b64,
  makeKeyPair,
  newId,
  responseXml,
  signElement,
  startSamlIdp,
  type AssertionOptions,
  type AuthnRequest,
  type TestSamlIdp,
} from '../helpers/saml-idp.js';
import { roleIn } from '../workspaces/helpers.js';
import { samlConnection, ssoWorkspace, type SsoWorkspace } from './fixtures.js';
import { postToAcs, startSso } from './flow.js';

let app: TestApp;
let idp: TestSamlIdp;
let wsA: SsoWorkspace;
let wsB: SsoWorkspace;
let connectionA: string;

beforeAll(async () => {
  [app, idp] = await Promise.all([startTestApp(), startSamlIdp()]);
  [wsA, wsB] = await Promise.all([ssoWorkspace(app, 'safe-a'), ssoWorkspace(app, 'safe-b')]);
  connectionA = (await samlConnection(app, wsA, idp)).id;
  await samlConnection(app, wsB, idp);
});
afterAll(async () => {
  await app?.close();
  await idp?.close();
});

let n = 0;
const emailAt = (ws: SsoWorkspace) => `p${++n}-${Date.now()}@${ws.domain}`;
const accountOf = (email: string) =>
  app.deps.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();

/** A started sign-in of workspace A: its request (as the IdP reads it) and the browser that started it. */
async function started(ws = wsA) {
  const email = emailAt(ws);
  const { request, browser } = await startSso(app, email, new Browser());
  return { email, request, browser };
}

/** The assertion a correct IdP makes for `request` and `email`, with `change` applied. */
const goodAssertion = (
  request: AuthnRequest,
  email: string,
  change: Partial<AssertionOptions> = {},
): AssertionOptions => ({
  id: newId(),
  issuer: idp.entityId,
  audience: request.issuer,
  recipient: request.acsUrl,
  inResponseTo: request.id,
  nameId: email,
  ...change,
});

/** A response around an assertion signed with the IdP's key (or `key`), with the algorithms given. */
function signedResponse(
  request: AuthnRequest,
  assertion: AssertionOptions,
  opts: {
    key?: ReturnType<typeof makeKeyPair>;
    signatureAlgorithm?: string;
    digestAlgorithm?: string;
    keyInfo?: boolean;
  } = {},
) {
  const signed = signElement(assertionXml(assertion), assertion.id!, opts.key ?? idp.key, opts);
  return responseXml({ issuer: idp.entityId, destination: request.acsUrl, inResponseTo: request.id, inner: signed });
}

/** Posts `xml` to the ACS of workspace A in `browser`; expects the refusal `error` and nothing granted to `email`. */
async function expectRefused(
  xml: string,
  browser: Browser,
  email: string,
  error = 'SSO_ASSERTION_INVALID',
  acs?: string,
) {
  const landing = await postToAcs(acs ?? `${app.url}/auth/sso/saml/${connectionA}/acs`, b64(xml), browser);
  expect(landing.error).toBe(error);
  expect(landing.code).toBeUndefined();
  expect(await accountOf(email)).toBeUndefined();
}

describe('the baseline', () => {
  it('a correctly signed answer to this browser’s request signs in (what the refusals below change)', async () => {
    const { email, request, browser } = await started();
    const landing = await postToAcs(
      request.acsUrl,
      b64(signedResponse(request, goodAssertion(request, email))),
      browser,
    );
    expect(landing.error).toBeUndefined();
    expect((await exchange(app, landing.code)).status).toBe(200);
  });

  it('a correctly signed Response (rather than Assertion) signs in too', async () => {
    const { email, request, browser } = await started();
    const responseId = newId();
    const xml = responseXml({
      id: responseId,
      issuer: idp.entityId,
      destination: request.acsUrl,
      inResponseTo: request.id,
      inner: assertionXml(goodAssertion(request, email)),
    });
    const landing = await postToAcs(request.acsUrl, b64(signElement(xml, responseId, idp.key)), browser);
    expect(landing.error).toBeUndefined();
  });
});

describe('signatures', () => {
  it('refuses an unsigned answer', async () => {
    const { email, request, browser } = await started();
    const xml = responseXml({
      issuer: idp.entityId,
      inResponseTo: request.id,
      inner: assertionXml(goodAssertion(request, email)),
    });
    await expectRefused(xml, browser, email);
  });

  it('refuses an answer signed by another key, even with its certificate carried in the message (KeyInfo)', async () => {
    const { email, request, browser } = await started();
    const attacker = makeKeyPair('attacker');
    await expectRefused(
      signedResponse(request, goodAssertion(request, email), { key: attacker, keyInfo: true }),
      browser,
      email,
    );
  });

  it('refuses RSA-SHA1 signatures and SHA-1 digests', async () => {
    const first = await started();
    await expectRefused(
      signedResponse(first.request, goodAssertion(first.request, first.email), {
        signatureAlgorithm: ALG.rsaSha1,
        digestAlgorithm: ALG.sha1,
      }),
      first.browser,
      first.email,
    );
    const second = await started();
    await expectRefused(
      signedResponse(second.request, goodAssertion(second.request, second.email), { digestAlgorithm: ALG.sha1 }),
      second.browser,
      second.email,
    );
  });
});

describe('signature wrapping', () => {
  it('XSW 1: a second, unsigned assertion beside the signed one', async () => {
    const { email, request, browser } = await started();
    const victim = emailAt(wsA);
    const signed = signElement(assertionXml(goodAssertion(request, email, { id: 'a1' })), 'a1', idp.key);
    const evil = assertionXml(goodAssertion(request, victim));
    await expectRefused(
      responseXml({ issuer: idp.entityId, inResponseTo: request.id, inner: evil + signed }),
      browser,
      victim,
    );
  });

  it('XSW 2: an evil assertion with the ID of the signed one beside it', async () => {
    const { email, request, browser } = await started();
    const victim = emailAt(wsA);
    const signed = signElement(assertionXml(goodAssertion(request, email, { id: 'same' })), 'same', idp.key);
    const evil = assertionXml(goodAssertion(request, victim, { id: 'same' }));
    await expectRefused(
      responseXml({ issuer: idp.entityId, inResponseTo: request.id, inner: signed + evil }),
      browser,
      victim,
    );
  });

  it('XSW 3: the signed assertion wrapped inside an evil one', async () => {
    const { email, request, browser } = await started();
    const victim = emailAt(wsA);
    const signed = signElement(assertionXml(goodAssertion(request, email, { id: 'inner' })), 'inner', idp.key);
    const evil = assertionXml(goodAssertion(request, victim)).replace(
      '</saml:Assertion>',
      `${signed}</saml:Assertion>`,
    );
    await expectRefused(responseXml({ issuer: idp.entityId, inResponseTo: request.id, inner: evil }), browser, victim);
  });

  it('XSW 4: the signed assertion moved under the Response’s Extensions, an evil one carrying its signature', async () => {
    const { email, request, browser } = await started();
    const victim = emailAt(wsA);
    const signed = signElement(assertionXml(goodAssertion(request, email, { id: 'orig' })), 'orig', idp.key);
    const signature = /<ds:Signature[\s\S]*<\/ds:Signature>/.exec(signed)![0];
    const evilId = newId();
    const evil = assertionXml(goodAssertion(request, victim, { id: evilId })).replace(
      /(<saml:Issuer>[^<]*<\/saml:Issuer>)/,
      `$1${signature}`,
    );
    const inner = `<samlp:Extensions>${signed}</samlp:Extensions>${evil}`;
    await expectRefused(responseXml({ issuer: idp.entityId, inResponseTo: request.id, inner }), browser, victim);
  });

  it('XSW 5: the signed assertion moved under the signature’s ds:Object of an evil assertion', async () => {
    const { email, request, browser } = await started();
    const victim = emailAt(wsA);
    const signed = signElement(assertionXml(goodAssertion(request, email, { id: 'obj' })), 'obj', idp.key);
    const signature = /<ds:Signature[\s\S]*<\/ds:Signature>/.exec(signed)![0];
    const withObject = signature.replace('</ds:Signature>', `<ds:Object>${signed}</ds:Object></ds:Signature>`);
    const evil = assertionXml(goodAssertion(request, victim, { id: 'obj' })).replace(
      /(<saml:Issuer>[^<]*<\/saml:Issuer>)/,
      `$1${withObject}`,
    );
    await expectRefused(responseXml({ issuer: idp.entityId, inResponseTo: request.id, inner: evil }), browser, victim);
  });

  it('XSW 6: a comment inside the signed NameID (read in part, it would be another address)', async () => {
    const { request, browser } = await started();
    const victim = emailAt(wsA);
    // The IdP signs an address of another domain; the comment leaves the signature intact (exclusive C14N
    // drops comments), and a reader of the first text node alone would see the victim's address.
    const signedFor = `${victim}.attacker.example`;
    const assertion = goodAssertion(request, signedFor);
    const signed = signElement(assertionXml(assertion), assertion.id!, idp.key);
    const commented = signed.replace(`>${signedFor}<`, `>${victim}<!---->.attacker.example<`);
    expect(commented).not.toBe(signed);
    // The address is read whole from the signed bytes (comments dropped): the attacker's domain, refused.
    await expectRefused(
      responseXml({ issuer: idp.entityId, inResponseTo: request.id, inner: commented }),
      browser,
      victim,
      'SSO_DOMAIN_MISMATCH',
    );
    expect(await accountOf(signedFor)).toBeUndefined();
  });

  it('XSW 7: an unsigned Response around a signed assertion of another subject and another request', async () => {
    // The victim's genuine assertion, answering the victim's own request...
    const victimFlow = await started();
    const captured = signElement(
      assertionXml(goodAssertion(victimFlow.request, victimFlow.email, { id: 'captured' })),
      'captured',
      idp.key,
    );
    // ...replayed by the attacker inside a Response to the attacker's request.
    const attacker = await started();
    const xml = responseXml({ issuer: idp.entityId, inResponseTo: attacker.request.id, inner: captured });
    await expectRefused(xml, attacker.browser, victimFlow.email);
  });

  it('XSW 8: a copied signature over changed content (another subject under the signed ID)', async () => {
    const { email, request, browser } = await started();
    const victim = emailAt(wsA);
    const signed = signElement(assertionXml(goodAssertion(request, email, { id: 'copy' })), 'copy', idp.key);
    const changed = signed.replace(`>${email}<`, `>${victim}<`);
    await expectRefused(
      responseXml({ issuer: idp.entityId, inResponseTo: request.id, inner: changed }),
      browser,
      victim,
    );
  });

  it('XSW 9: a signed Response with an evil assertion added after signing', async () => {
    const { email, request, browser } = await started();
    const victim = emailAt(wsA);
    const responseId = newId();
    const xml = responseXml({
      id: responseId,
      issuer: idp.entityId,
      destination: request.acsUrl,
      inResponseTo: request.id,
      inner: assertionXml(goodAssertion(request, email)),
    });
    const signed = signElement(xml, responseId, idp.key);
    const evil = signed.replace(
      '</samlp:Response>',
      `${assertionXml(goodAssertion(request, victim))}</samlp:Response>`,
    );
    await expectRefused(evil, browser, victim);
  });
});

describe('conditions', () => {
  it('refuses a wrong audience', async () => {
    const { email, request, browser } = await started();
    await expectRefused(
      signedResponse(request, goodAssertion(request, email, { audience: 'https://another-sp.example' })),
      browser,
      email,
    );
  });

  it('refuses a wrong recipient', async () => {
    const { email, request, browser } = await started();
    await expectRefused(
      signedResponse(request, goodAssertion(request, email, { recipient: `${app.url}/auth/sso/saml/${newId()}/acs` })),
      browser,
      email,
    );
  });

  it('refuses a wrong Destination', async () => {
    const { email, request, browser } = await started();
    const assertion = goodAssertion(request, email);
    const signed = signElement(assertionXml(assertion), assertion.id!, idp.key);
    const xml = responseXml({
      issuer: idp.entityId,
      destination: 'https://elsewhere.example/acs',
      inResponseTo: request.id,
      inner: signed,
    });
    await expectRefused(xml, browser, email);
  });

  it('refuses an expired assertion (past NotOnOrAfter beyond the 2 minutes of skew)', async () => {
    const { email, request, browser } = await started();
    const past = new Date(Date.now() - 5 * 60_000);
    await expectRefused(
      signedResponse(
        request,
        goodAssertion(request, email, { notBefore: new Date(past.getTime() - 60_000), notOnOrAfter: past }),
      ),
      browser,
      email,
    );
  });

  it('refuses a not-yet-valid assertion (NotBefore beyond the 2 minutes of skew)', async () => {
    const { email, request, browser } = await started();
    const future = new Date(Date.now() + 5 * 60_000);
    await expectRefused(
      signedResponse(
        request,
        goodAssertion(request, email, { notBefore: future, notOnOrAfter: new Date(future.getTime() + 60_000) }),
      ),
      browser,
      email,
    );
  });
});

describe('requests, replays and browsers', () => {
  it('refuses a replayed answer (the same response posted twice)', async () => {
    const { email, request, browser } = await started();
    const xml = signedResponse(request, goodAssertion(request, email));
    const first = await postToAcs(request.acsUrl, b64(xml), browser);
    expect(first.error).toBeUndefined();
    const again = await postToAcs(request.acsUrl, b64(xml), browser);
    expect(again.error).toBe('SSO_ASSERTION_INVALID');
  });

  it('refuses a replayed assertion id even where IdP-initiated answers are allowed', async () => {
    const ws = await ssoWorkspace(app, 'safe-idp');
    const { id, sp } = await samlConnection(app, ws, idp, {});
    await app.api('PATCH', `/workspaces/${ws.id}/sso/connections/${id}`, {
      token: ws.owner.accessToken,
      body: { allowIdpInitiated: true },
    });
    const email = emailAt(ws);
    const unsolicited = { id: '', acsUrl: sp.acsUrl, issuer: sp.entityId, relayState: null };
    const assertion = goodAssertion(unsolicited, email, { inResponseTo: undefined });
    const signed = signElement(assertionXml(assertion), assertion.id!, idp.key);
    const xml = responseXml({ issuer: idp.entityId, destination: sp.acsUrl, inner: signed });
    const first = await postToAcs(sp.acsUrl, b64(xml), new Browser());
    expect(first.error).toBeUndefined();
    expect((await exchange(app, first.code)).status).toBe(200);
    const replayed = await postToAcs(sp.acsUrl, b64(xml), new Browser());
    expect(replayed.error).toBe('SSO_ASSERTION_INVALID');
  });

  it('refuses IdP-initiated answers (no request of ours) when the connection does not allow them', async () => {
    const email = emailAt(wsA);
    const acsUrl = `${app.url}/auth/sso/saml/${connectionA}/acs`;
    const entityId = `${app.url}/auth/sso/saml/${connectionA}/metadata`;
    const unsolicited = { id: '', acsUrl, issuer: entityId, relayState: null };
    const assertion = goodAssertion(unsolicited, email, { inResponseTo: undefined });
    const signed = signElement(assertionXml(assertion), assertion.id!, idp.key);
    await expectRefused(
      responseXml({ issuer: idp.entityId, destination: acsUrl, inner: signed }),
      new Browser(),
      email,
    );
  });

  it("refuses an answer to another connection's request", async () => {
    // A request of workspace B's connection, answered at workspace A's ACS.
    const b = await started(wsB);
    const email = emailAt(wsA);
    const acsA = `${app.url}/auth/sso/saml/${connectionA}/acs`;
    const forA = { ...b.request, acsUrl: acsA, issuer: `${app.url}/auth/sso/saml/${connectionA}/metadata` };
    await expectRefused(signedResponse(forA, goodAssertion(forA, email)), b.browser, email);
  });

  it('refuses a login started in another browser (the binding cookie is missing or another)', async () => {
    const { email, request } = await started();
    const xml = signedResponse(request, goodAssertion(request, email));
    await expectRefused(xml, new Browser(), email);
    // The other browser has its own binding from its own start.
    const other = await started();
    const { email: email2, request: request2 } = await started();
    await expectRefused(signedResponse(request2, goodAssertion(request2, email2)), other.browser, email2);
  });
});

describe('domains and workspaces', () => {
  it('refuses an address outside the verified domains of the connection’s workspace (SSO_DOMAIN_MISMATCH)', async () => {
    const { request, browser } = await started();
    const outsider = `someone-${Date.now()}@not-verified.example`;
    await expectRefused(
      signedResponse(request, goodAssertion(request, outsider)),
      browser,
      outsider,
      'SSO_DOMAIN_MISMATCH',
    );
  });

  it("refuses workspace A's connection asserting an address of workspace B's domain; nothing is granted in B", async () => {
    const { request, browser } = await started();
    const inB = emailAt(wsB);
    await expectRefused(signedResponse(request, goodAssertion(request, inB)), browser, inB, 'SSO_DOMAIN_MISMATCH');
    // B's owner is on B's domain too: A's connection cannot sign them in either.
    await app.deps.db
      .updateTable('users')
      .set({ email: `owner-${Date.now()}@${wsB.domain}` })
      .where('id', '=', wsB.owner.userId)
      .execute();
    const owner = await app.deps.db
      .selectFrom('users')
      .select('email')
      .where('id', '=', wsB.owner.userId)
      .executeTakeFirstOrThrow();
    const again = await started();
    const landing = await postToAcs(
      again.request.acsUrl,
      b64(signedResponse(again.request, goodAssertion(again.request, owner.email))),
      again.browser,
    );
    expect(landing.error).toBe('SSO_DOMAIN_MISMATCH');
    expect(await roleIn(app, wsA.id, wsB.owner.userId)).toBeUndefined();
    const members = await app.deps.db
      .selectFrom('workspace_members')
      .select('user_id')
      .where('workspace_id', '=', wsB.id)
      .execute();
    expect(members).toEqual([{ user_id: wsB.owner.userId }]);
  });
});
