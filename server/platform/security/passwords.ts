// Password policy and hashing. bcrypt reads at most 72 bytes, so longer passwords are refused rather than
// silently cut; the policy counts UTF-8 bytes, not characters.
import bcrypt from 'bcrypt';
import crypto from 'node:crypto';
import { z } from 'zod';

export const PASSWORD_MIN_CHARACTERS = 8;
export const PASSWORD_MAX_BYTES = 72;

/** Why a password breaks the policy, or null when it is acceptable. */
export function passwordPolicyViolation(password: string): string | null {
  if ([...password].length < PASSWORD_MIN_CHARACTERS) {
    return `Password must be at least ${PASSWORD_MIN_CHARACTERS} characters long.`;
  }
  if (Buffer.byteLength(password, 'utf8') > PASSWORD_MAX_BYTES) {
    return `Password must be at most ${PASSWORD_MAX_BYTES} bytes in UTF-8 (about ${PASSWORD_MAX_BYTES} plain letters; emoji and accented letters count for more).`;
  }
  if (!/\p{L}/u.test(password)) return 'Password must contain at least one letter.';
  if (!/\p{Nd}/u.test(password)) return 'Password must contain at least one number.';
  return null;
}

/** A new password: any policy failure is answered 400 WEAK_PASSWORD (see fromZodError). */
export const newPasswordSchema = z
  .string()
  .superRefine((password, ctx) => {
    const violation = passwordPolicyViolation(password);
    if (violation) ctx.addIssue({ code: 'custom', message: violation, params: { code: 'WEAK_PASSWORD' } });
  })
  .meta({
    description: `${PASSWORD_MIN_CHARACTERS} characters to ${PASSWORD_MAX_BYTES} UTF-8 bytes, with at least one letter and one number.`,
    // The policy's bounds (WEAK_PASSWORD past them): 72 bytes are at most 72 characters.
    minLength: PASSWORD_MIN_CHARACTERS,
    maxLength: PASSWORD_MAX_BYTES,
    examples: ['Correct-horse-42'],
  });

export class PasswordHasher {
  private dummyHash: Promise<string> | undefined;

  constructor(private readonly cost: number) {}

  hash(password: string): Promise<string> {
    return bcrypt.hash(password, this.cost);
  }

  /**
   * Constant-work check: with no stored hash (unknown account) or an over-long password it still runs one
   * bcrypt comparison at the configured cost, so the answer time does not reveal which case it was.
   */
  async verify(password: string, storedHash: string | null | undefined): Promise<boolean> {
    const usable = storedHash && Buffer.byteLength(password, 'utf8') <= PASSWORD_MAX_BYTES;
    if (usable) return bcrypt.compare(password, storedHash);
    await bcrypt.compare(password.slice(0, PASSWORD_MAX_BYTES), await this.dummy());
    return false;
  }

  /** Computes the dummy hash now rather than on the first unknown-e-mail login. */
  warmUp(): Promise<string> {
    return this.dummy();
  }

  private dummy(): Promise<string> {
    this.dummyHash ??= bcrypt.hash(crypto.randomBytes(16).toString('hex'), this.cost);
    return this.dummyHash;
  }
}
