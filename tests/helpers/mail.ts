// Reads what EMAIL_PROVIDER=MOCK "sent", straight from email_logs.
import type { TestApp } from './app.js';

export async function mailsTo(app: TestApp, to: string) {
  return app.deps.db
    .selectFrom('email_logs')
    .selectAll()
    .where('to', '=', to.toLowerCase())
    .orderBy('created_at')
    .execute();
}

/** The token of the newest mail of `template` to `to` (e.g. 'email-verification', 'password-reset'). */
export async function latestMailToken(app: TestApp, to: string, template: string): Promise<string> {
  const mails = (await mailsTo(app, to)).filter((m) => m.template === template);
  const link = mails.at(-1)?.link;
  if (!link) throw new Error(`no ${template} mail to ${to}`);
  const token = new URL(link).searchParams.get('token');
  if (!token) throw new Error(`no token in ${link}`);
  return token;
}
