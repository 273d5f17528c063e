// A SAML 2.0 identity provider on loopback, for the single sign-on tests: a key pair and a self-signed
// certificate made at test time (openssl), metadata, and the HTTP-Redirect sign-in endpoint that reads the
// AuthnRequest and answers the HTML form that posts a signed Response back to the ACS (as Okta or Entra do);
// with `mode.loginPage`, first a login page whose button the person clicks.
// Responses are signed with xml-crypto (enveloped, exclusive C14N, RSA-SHA256 by default); tests can also
// build answers by hand (`response`) to forge what an attacker would send.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { SignedXml } from 'xml-crypto';

export interface KeyPair {
  privateKey: string;
  /** PEM */
  certificate: string;
}

/** An RSA key and its self-signed certificate, made by openssl in a temporary folder. */
export function makeKeyPair(subject = 'test-idp'): KeyPair {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'saml-key-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        'key.pem',
        '-out',
        'cert.pem',
        '-days',
        '2',
        '-subj',
        `/CN=${subject}`,
      ],
      { cwd: dir, stdio: 'ignore' },
    );
    return {
      privateKey: fs.readFileSync(path.join(dir, 'key.pem'), 'utf8'),
      certificate: fs.readFileSync(path.join(dir, 'cert.pem'), 'utf8'),
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export const ALG = {
  rsaSha256: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  rsaSha1: 'http://www.w3.org/2000/09/xmldsig#rsa-sha1',
  sha256: 'http://www.w3.org/2001/04/xmlenc#sha256',
  sha1: 'http://www.w3.org/2000/09/xmldsig#sha1',
};
const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';

export interface AssertionOptions {
  id?: string;
  issuer: string;
  audience: string;
  recipient: string;
  inResponseTo?: string;
  nameId: string;
  nameIdFormat?: string;
  /** Extra attributes (Name -> value). */
  attributes?: Record<string, string>;
  notBefore?: Date;
  notOnOrAfter?: Date;
}

const iso = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
const xmlText = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
export const newId = () => `_${crypto.randomBytes(16).toString('hex')}`;

/** An unsigned Assertion element. */
export function assertionXml(o: AssertionOptions): string {
  const now = new Date();
  const notBefore = o.notBefore ?? new Date(now.getTime() - 30_000);
  const notOnOrAfter = o.notOnOrAfter ?? new Date(now.getTime() + 5 * 60_000);
  const irt = o.inResponseTo ? ` InResponseTo="${o.inResponseTo}"` : '';
  const attributes = Object.entries(o.attributes ?? {})
    .map(
      ([name, value]) =>
        `<saml:Attribute Name="${xmlText(name)}"><saml:AttributeValue>${xmlText(value)}</saml:AttributeValue></saml:Attribute>`,
    )
    .join('');
  return (
    `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${o.id ?? newId()}" Version="2.0" IssueInstant="${iso(now)}">` +
    `<saml:Issuer>${xmlText(o.issuer)}</saml:Issuer>` +
    `<saml:Subject><saml:NameID Format="${o.nameIdFormat ?? EMAIL_FORMAT}">${xmlText(o.nameId)}</saml:NameID>` +
    `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData${irt} NotOnOrAfter="${iso(notOnOrAfter)}" Recipient="${xmlText(o.recipient)}"/></saml:SubjectConfirmation></saml:Subject>` +
    `<saml:Conditions NotBefore="${iso(notBefore)}" NotOnOrAfter="${iso(notOnOrAfter)}"><saml:AudienceRestriction><saml:Audience>${xmlText(o.audience)}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="${iso(now)}" SessionIndex="${newId()}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
    (attributes ? `<saml:AttributeStatement>${attributes}</saml:AttributeStatement>` : '') +
    `</saml:Assertion>`
  );
}

/** A Response element around `inner` (one or more assertions, or anything a forger puts there). */
export function responseXml(o: {
  id?: string;
  issuer: string;
  destination?: string;
  inResponseTo?: string;
  inner: string;
}) {
  const irt = o.inResponseTo ? ` InResponseTo="${o.inResponseTo}"` : '';
  const destination = o.destination ? ` Destination="${xmlText(o.destination)}"` : '';
  return (
    `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${o.id ?? newId()}" Version="2.0" IssueInstant="${iso(new Date())}"${destination}${irt}>` +
    `<saml:Issuer>${xmlText(o.issuer)}</saml:Issuer>` +
    `<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>` +
    o.inner +
    `</samlp:Response>`
  );
}

/**
 * Signs the element with `ID="id"` in `xml` (enveloped), the signature placed after its Issuer. With
 * `keyInfo`, the certificate travels in the signature (which must never be trusted for itself).
 */
export function signElement(
  xml: string,
  id: string,
  key: KeyPair,
  opts: { signatureAlgorithm?: string; digestAlgorithm?: string; keyInfo?: boolean } = {},
): string {
  const sig = new SignedXml({
    privateKey: key.privateKey,
    publicCert: opts.keyInfo ? key.certificate : undefined,
    signatureAlgorithm: opts.signatureAlgorithm ?? ALG.rsaSha256,
    canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  });
  sig.addReference({
    xpath: `//*[@ID='${id}']`,
    transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', 'http://www.w3.org/2001/10/xml-exc-c14n#'],
    digestAlgorithm: opts.digestAlgorithm ?? ALG.sha256,
  });
  sig.computeSignature(xml, {
    prefix: 'ds',
    location: { reference: `//*[@ID='${id}']/*[local-name(.)='Issuer']`, action: 'after' },
  });
  return sig.getSignedXml();
}

export const b64 = (xml: string) => Buffer.from(xml, 'utf8').toString('base64');

export interface AuthnRequest {
  id: string;
  acsUrl: string;
  issuer: string;
  relayState: string | null;
}

/** Reads the deflated, base64 AuthnRequest of an HTTP-Redirect URL. */
export function readAuthnRequest(url: URL): AuthnRequest {
  const raw = url.searchParams.get('SAMLRequest');
  if (!raw) throw new Error(`no SAMLRequest in ${url.href}`);
  const xml = zlib.inflateRawSync(Buffer.from(raw, 'base64')).toString('utf8');
  const attr = (name: string) => new RegExp(`\\s${name}="([^"]*)"`).exec(xml)?.[1] ?? '';
  const issuer = /<(?:\w+:)?Issuer[^>]*>([^<]*)</.exec(xml)?.[1] ?? '';
  return {
    id: attr('ID'),
    acsUrl: attr('AssertionConsumerServiceURL'),
    issuer,
    relayState: url.searchParams.get('RelayState'),
  };
}

export interface TestSamlIdp {
  url: string;
  entityId: string;
  ssoUrl: string;
  key: KeyPair;
  metadataXml: string;
  /** Who signs in at the next request (the NameID, an e-mail). */
  signInAs(email: string): void;
  /** How the next answers are made (defaults: assertion signed, RSA-SHA256). */
  mode: {
    sign: 'assertion' | 'response';
    attributes?: Record<string, string>;
    nameIdFormat?: string;
    /** GET /sso shows a login page whose button posts to /sso/login, which answers the form (browser tests). */
    loginPage?: boolean;
  };
  /** The signed SAMLResponse (base64) this IdP would post for `request`. */
  answer(request: AuthnRequest, email?: string): string;
  close(): Promise<void>;
}

export async function startSamlIdp(): Promise<TestSamlIdp> {
  const key = makeKeyPair();
  let person = 'nobody@example.invalid';
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', idp.url);
    if (url.pathname === '/sso' && req.method === 'GET' && idp.mode.loginPage) {
      // The login page: the AuthnRequest's query rides along to /sso/login, posted by the person's click.
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(
          `<html><body><h1>Test IdP</h1><form method="post" action="/sso/login">` +
            `<input type="hidden" name="query" value="${xmlText(url.search)}"/><button type="submit">Sign in</button></form></body></html>`,
        );
      return;
    }
    if (url.pathname === '/sso/login' && req.method === 'POST' && idp.mode.loginPage) {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => answerForm(new URL(`/sso${new URLSearchParams(body).get('query') ?? ''}`, idp.url), res));
      return;
    }
    if (url.pathname !== '/sso') {
      res.writeHead(404).end();
      return;
    }
    answerForm(url, res);
  });
  /** The auto-submitting HTML form that posts the signed answer to the AuthnRequest of `url` to its ACS. */
  function answerForm(url: URL, res: http.ServerResponse) {
    const request = readAuthnRequest(url);
    const samlResponse = idp.answer(request);
    const relay = request.relayState
      ? `<input type="hidden" name="RelayState" value="${xmlText(request.relayState)}"/>`
      : '';
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end(
        `<html><body onload="document.forms[0].submit()"><form method="post" action="${xmlText(request.acsUrl)}">` +
          `<input type="hidden" name="SAMLResponse" value="${samlResponse}"/>${relay}<noscript><button>Continue</button></noscript></form></body></html>`,
      );
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const certBody = key.certificate.replace(/-----[^-]+-----|\s+/g, '');
  const idp: TestSamlIdp = {
    url,
    entityId: `${url}/metadata`,
    ssoUrl: `${url}/sso`,
    key,
    metadataXml:
      `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${url}/metadata">` +
      `<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">` +
      `<md:KeyDescriptor use="signing"><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>${certBody}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>` +
      `<md:NameIDFormat>${EMAIL_FORMAT}</md:NameIDFormat>` +
      `<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${url}/sso"/>` +
      `</md:IDPSSODescriptor></md:EntityDescriptor>`,
    signInAs(email) {
      person = email;
    },
    mode: { sign: 'assertion' },
    answer(request, email = person) {
      const assertionId = newId();
      const responseId = newId();
      const assertion = assertionXml({
        id: assertionId,
        issuer: idp.entityId,
        audience: request.issuer,
        recipient: request.acsUrl,
        inResponseTo: request.id,
        nameId: email,
        nameIdFormat: idp.mode.nameIdFormat,
        attributes: idp.mode.attributes,
      });
      const signedAssertion = idp.mode.sign === 'assertion' ? signElement(assertion, assertionId, key) : assertion;
      const response = responseXml({
        id: responseId,
        issuer: idp.entityId,
        destination: request.acsUrl,
        inResponseTo: request.id,
        inner: signedAssertion,
      });
      return b64(idp.mode.sign === 'response' ? signElement(response, responseId, key) : response);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return idp;
}
