// Symmetric encryption of secrets the service must be able to read back (webhook signing secrets):
// AES-256-GCM under a key derived from WEBHOOK_SECRET_ENCRYPTION_KEY. Stored as iv.tag.ciphertext
// (base64url); a tampered value fails to decrypt rather than yielding garbage.
import crypto from 'node:crypto';

export class SecretBox {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = crypto.createHash('sha256').update(secret, 'utf8').digest();
  }

  seal(plaintext: string): string {
    const iv = crypto.randomBytes(12);
    const cipher = crypto.createCipheriv('aes-256-gcm', this.key, iv);
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [iv, cipher.getAuthTag(), ciphertext].map((b) => b.toString('base64url')).join('.');
  }

  open(sealed: string): string {
    const [iv, tag, ciphertext] = sealed.split('.').map((p) => Buffer.from(p, 'base64url'));
    if (!iv || !tag || !ciphertext) throw new Error('malformed sealed secret');
    const decipher = crypto.createDecipheriv('aes-256-gcm', this.key, iv);
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
  }
}
