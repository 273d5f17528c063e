// SAML 2.0 of a connection, on @node-saml/node-saml: the identity provider's metadata read at set-up, the
// service provider's metadata, the AuthnRequest (HTTP-Redirect) and the checks of an answer. node-saml
// verifies the signature with the connection's certificates only (never a key carried in the message) and
// the audience and time conditions; the rules it leaves to its caller are here: RSA-SHA256 or stronger,
// the Recipient and Destination, the assertion id never seen before, and the e-mail of the subject.
import crypto from 'node:crypto';
import { DOMParser, type Document, type Element } from '@xmldom/xmldom';
import { SAML, ValidateInResponseTo, generateServiceProviderMetadata, type CacheProvider } from '@node-saml/node-saml';
import { AppError } from '../../server/platform/errors.js';

export const NS = {
  md: 'urn:oasis:names:tc:SAML:2.0:metadata',
  saml: 'urn:oasis:names:tc:SAML:2.0:assertion',
  samlp: 'urn:oasis:names:tc:SAML:2.0:protocol',
  ds: 'http://www.w3.org/2000/09/xmldsig#',
};
const REDIRECT_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
/** Clock skew allowed on NotBefore and NotOnOrAfter. */
export const CLOCK_SKEW_MS = 2 * 60_000;

const SIGNATURE_ALGORITHMS = new Set([
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha384',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512',
]);
const DIGEST_ALGORITHMS = new Set([
  'http://www.w3.org/2001/04/xmlenc#sha256',
  'http://www.w3.org/2001/04/xmldsig-more#sha384',
  'http://www.w3.org/2001/04/xmlenc#sha512',
]);
const EMAIL_ATTRIBUTES = ['email', 'mail', 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress'];

const invalid = (message: string) =>
  new AppError('BAD_REQUEST', message, [{ path: 'metadataXml', message, code: 'custom' }]);

/** A document without errors and without a DOCTYPE (entities have no place in SAML), else undefined. */
function parseXml(xml: string): (Document & { documentElement: Element }) | undefined {
  let failed = false;
  let doc: Document;
  try {
    doc = new DOMParser({
      onError: (level) => {
        if (level !== 'warning') failed = true;
      },
    }).parseFromString(xml, 'text/xml');
  } catch {
    return undefined;
  }
  if (failed || !doc.documentElement || doc.doctype) return undefined;
  return doc as Document & { documentElement: Element };
}

const elements = (node: Document | Element, ns: string, local: string): Element[] =>
  Array.from(node.getElementsByTagNameNS(ns, local) as unknown as ArrayLike<Element>);

/** A certificate's base64 body (PEM armour and whitespace removed), when it is one. */
export function certificateBody(value: string): string | undefined {
  const body = value
    .replace(/-----(BEGIN|END) CERTIFICATE-----/g, '')
    .replace(/\s+/g, '')
    .trim();
  try {
    new crypto.X509Certificate(Buffer.from(body, 'base64'));
    return body;
  } catch {
    return undefined;
  }
}

export function describeCertificate(body: string) {
  const cert = new crypto.X509Certificate(Buffer.from(body, 'base64'));
  return { fingerprint: cert.fingerprint256, notAfter: new Date(cert.validTo).toISOString() };
}

/** The entity id, HTTP-Redirect SSO URL and signing certificates of an identity provider's metadata. */
export function readIdpMetadata(xml: string) {
  const doc = parseXml(xml);
  if (!doc) throw invalid('The metadata is not well-formed XML (or carries a DOCTYPE).');
  const entity = elements(doc, NS.md, 'EntityDescriptor')[0];
  const idp = entity && elements(entity, NS.md, 'IDPSSODescriptor')[0];
  if (!entity || !idp) throw invalid('The metadata has no EntityDescriptor with an IDPSSODescriptor.');
  const entityId = entity.getAttribute('entityID');
  const sso = elements(idp, NS.md, 'SingleSignOnService').find((e) => e.getAttribute('Binding') === REDIRECT_BINDING);
  const certificates = elements(idp, NS.md, 'KeyDescriptor')
    .filter((k) => (k.getAttribute('use') ?? 'signing') === 'signing')
    .flatMap((k) => elements(k, NS.ds, 'X509Certificate'))
    .map((c) => certificateBody(c.textContent ?? ''));
  if (!entityId) throw invalid('The metadata names no entityID.');
  const ssoUrl = sso?.getAttribute('Location');
  if (!ssoUrl || !/^https?:\/\//.test(ssoUrl)) throw invalid('The metadata has no HTTP-Redirect SingleSignOnService.');
  const bodies = certificates.filter((c): c is string => c !== undefined);
  if (!bodies.length || bodies.length !== certificates.length)
    throw invalid('The metadata has no valid signing certificate.');
  return { entityId, ssoUrl, certificates: [...new Set(bodies)].slice(0, 2) };
}

export interface SamlConnection {
  id: string;
  idp_entity_id: string | null;
  idp_sso_url: string | null;
  idp_certificates: string[];
  allow_idp_initiated: boolean;
}

/** Where the identity provider talks to this service about a connection. */
export function spUrls(base: string, connectionId: string) {
  const root = `${base.replace(/\/+$/, '')}/auth/sso/saml/${connectionId}`;
  return { entityId: `${root}/metadata`, acsUrl: `${root}/acs`, metadataUrl: `${root}/metadata` };
}

const pem = (body: string) =>
  `-----BEGIN CERTIFICATE-----\n${body.match(/.{1,64}/g)?.join('\n')}\n-----END CERTIFICATE-----\n`;

export function spMetadata(base: string, connectionId: string): string {
  const sp = spUrls(base, connectionId);
  return generateServiceProviderMetadata({
    issuer: sp.entityId,
    callbackUrl: sp.acsUrl,
    identifierFormat: EMAIL_FORMAT,
    wantAssertionsSigned: false,
  });
}

function samlOf(base: string, connection: SamlConnection, cacheProvider: CacheProvider, requestId?: string) {
  const sp = spUrls(base, connection.id);
  return new SAML({
    callbackUrl: sp.acsUrl,
    issuer: sp.entityId,
    audience: sp.entityId,
    entryPoint: connection.idp_sso_url ?? undefined,
    idpIssuer: connection.idp_entity_id ?? undefined,
    idpCert: connection.idp_certificates.map(pem),
    identifierFormat: EMAIL_FORMAT,
    wantAssertionsSigned: false,
    wantAuthnResponseSigned: false,
    acceptedClockSkewMs: CLOCK_SKEW_MS,
    validateInResponseTo: connection.allow_idp_initiated ? ValidateInResponseTo.ifPresent : ValidateInResponseTo.always,
    requestIdExpirationPeriodMs: 10 * 60_000,
    cacheProvider,
    disableRequestedAuthnContext: true,
    ...(requestId ? { generateUniqueId: () => requestId } : {}),
  });
}

/** The identity provider's URL with a deflated, HTTP-Redirect AuthnRequest of id `requestId`. */
export async function authnRequestUrl(base: string, connection: SamlConnection, requestId: string, relayState: string) {
  const noCache: CacheProvider = {
    saveAsync: async () => null,
    getAsync: async () => null,
    removeAsync: async () => null,
  };
  return samlOf(base, connection, noCache, requestId).getAuthorizeUrlAsync(relayState, undefined, {});
}

/** Why an answer was refused, for the log (never its content). */
export class AssertionRefused extends Error {}

/**
 * Algorithms of every signature in the message: RSA-SHA256 or stronger, SHA-256 or stronger digests.
 * Checked before node-saml (whose xml-crypto still accepts SHA-1).
 */
function checkAlgorithms(doc: Document) {
  for (const m of elements(doc, NS.ds, 'SignatureMethod'))
    if (!SIGNATURE_ALGORITHMS.has(m.getAttribute('Algorithm') ?? ''))
      throw new AssertionRefused(`signature algorithm ${m.getAttribute('Algorithm')} refused`);
  for (const m of elements(doc, NS.ds, 'DigestMethod'))
    if (!DIGEST_ALGORITHMS.has(m.getAttribute('Algorithm') ?? ''))
      throw new AssertionRefused(`digest algorithm ${m.getAttribute('Algorithm')} refused`);
}

export interface VerifiedAssertion {
  assertionId: string;
  /** NotOnOrAfter of the assertion (for the replay table), or 10 minutes from now. */
  validUntil: Date;
  subject: string;
  email: string | undefined;
  inResponseTo: string | undefined;
}

/**
 * Verifies a base64 SAMLResponse for `connection`: node-saml's checks, then ours over the signed
 * assertion only. `requests` answers whether an InResponseTo is a request of ours that it may take.
 */
export async function verifyResponse(
  base: string,
  connection: SamlConnection,
  samlResponse: string,
  requests: CacheProvider,
): Promise<VerifiedAssertion> {
  const xml = Buffer.from(samlResponse, 'base64').toString('utf8');
  const doc = parseXml(xml);
  if (!doc) throw new AssertionRefused('not well-formed XML');
  checkAlgorithms(doc);
  const sp = spUrls(base, connection.id);
  const destination = doc.documentElement.getAttribute('Destination');
  if (destination && destination !== sp.acsUrl) throw new AssertionRefused('Destination is not the ACS URL');
  let result;
  try {
    result = await samlOf(base, connection, requests).validatePostResponseAsync({ SAMLResponse: samlResponse });
  } catch (err) {
    throw new AssertionRefused(`node-saml: ${(err as Error).message}`);
  }
  const profile = result.profile;
  if (!profile) throw new AssertionRefused('no assertion');
  // The signed assertion alone, as node-saml verified it.
  const signed = profile.getAssertionXml && parseXml(profile.getAssertionXml());
  const assertion = signed && elements(signed, NS.saml, 'Assertion')[0];
  if (!assertion) throw new AssertionRefused('no signed assertion');
  const assertionId = assertion.getAttribute('ID');
  if (!assertionId) throw new AssertionRefused('assertion without ID');
  const confirmations = elements(assertion, NS.saml, 'SubjectConfirmationData');
  if (!confirmations.length || confirmations.some((c) => c.getAttribute('Recipient') !== sp.acsUrl))
    throw new AssertionRefused('Recipient is not the ACS URL');
  const notOnOrAfter = elements(assertion, NS.saml, 'Conditions')[0]?.getAttribute('NotOnOrAfter');
  const validUntil = notOnOrAfter ? new Date(Date.parse(notOnOrAfter) + CLOCK_SKEW_MS) : new Date(Date.now() + 600_000);
  const nameId = elements(assertion, NS.saml, 'NameID')[0];
  const subject = nameId?.textContent?.trim();
  if (!nameId || !subject) throw new AssertionRefused('no NameID');
  // A NameID split by a comment or other nodes is refused rather than read in part.
  if (nameId.childNodes.length !== 1) throw new AssertionRefused('NameID is not one text node');
  let email = nameId.getAttribute('Format') === EMAIL_FORMAT ? subject : undefined;
  if (!email)
    for (const attribute of elements(assertion, NS.saml, 'Attribute'))
      if (EMAIL_ATTRIBUTES.includes(attribute.getAttribute('Name') ?? '')) {
        const value = elements(attribute, NS.saml, 'AttributeValue')[0];
        if (value?.childNodes.length === 1) email = value.textContent?.trim();
        break;
      }
  const inResponseTo = confirmations[0].getAttribute('InResponseTo') || undefined;
  return { assertionId, validUntil, subject, email, inResponseTo };
}
