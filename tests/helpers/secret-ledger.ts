// Records every password and token the suite sends, and every response body and log line it sees after
// that. tests/helpers/secret-ledger-check.ts fails the file when a sent secret comes back anywhere.
// One ledger per test file (vitest isolates the module graph of each file).

interface Sent {
  label: string;
  seq: number;
}

// The mock mail log exists to show reset and verification links (EMAIL_PROVIDER=MOCK), so reading it
// back is not a leak.
const EXEMPT_WHERE = [/GET \/admin\/email-logs/];

export class SecretLedger {
  private seq = 0;
  private readonly secrets = new Map<string, Sent>();
  private readonly observations: Array<{ where: string; text: string; seq: number }> = [];

  sent(secret: string | undefined | null, label: string) {
    if (typeof secret !== 'string' || secret.length < 8 || this.secrets.has(secret)) return;
    this.secrets.set(secret, { label, seq: ++this.seq });
  }

  observe(where: string, text: string) {
    if (!text || EXEMPT_WHERE.some((re) => re.test(where))) return;
    this.observations.push({ where, text, seq: ++this.seq });
  }

  get trackedCount() {
    return this.secrets.size;
  }

  leaks(): string[] {
    const found: string[] = [];
    for (const [secret, { label, seq }] of this.secrets) {
      for (const o of this.observations) {
        if (o.seq > seq && o.text.includes(secret)) found.push(`${label} came back in ${o.where}`);
      }
    }
    return found;
  }
}

export const ledger = new SecretLedger();

const SECRET_FIELD = /pass|token|secret|key|backupcode/i;

/**
 * Secrets the service itself hands out once, found in a response body: a TOTP secret and its otpauth URI
 * (2FA setup), backup codes (as shown and as typed without the dash), the token of a sign-in's second
 * step. From then on, any response or log line carrying one is a leak.
 */
export function trackIssued(body: unknown) {
  if (!body || typeof body !== 'object') return;
  const b = body as Record<string, unknown>;
  if (typeof b.otpauthUrl === 'string') {
    ledger.sent(b.otpauthUrl, 'an otpauth URI');
    if (typeof b.secret === 'string') ledger.sent(b.secret, 'a TOTP secret');
  }
  if (Array.isArray(b.backupCodes)) {
    for (const code of b.backupCodes) {
      if (typeof code !== 'string') continue;
      ledger.sent(code, 'a backup code');
      ledger.sent(code.replace(/-/g, ''), 'a backup code (typed without its dash)');
    }
  }
  if (typeof b.mfaToken === 'string') ledger.sent(b.mfaToken, 'an mfaToken');
}

/** Tracks the secret-looking string fields of a JSON request body, recursively. */
export function trackBody(body: unknown, path = 'body') {
  if (!body || typeof body !== 'object') return;
  for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
    if (typeof v === 'string' && SECRET_FIELD.test(k)) ledger.sent(v, `${path}.${k}`);
    else if (v && typeof v === 'object') trackBody(v, `${path}.${k}`);
  }
}
