// Outgoing mail. EMAIL_PROVIDER=MOCK writes each mail, link included, to the email_logs table (readable
// by platform admins at GET /admin/email-logs); SMTP sends it through nodemailer, loaded only then.
import type { Config } from '../config.js';
import type { Db } from '../../../db/index.js';
import type { Logger } from '../logger.js';
import { settlesWithin } from '../in-flight.js';

export interface Mail {
  to: string;
  subject: string;
  /** Stable name of the template, e.g. "email-verification". */
  template: string;
  text: string;
  html?: string;
  /** The one action link of the mail, if any. */
  link?: string;
}

export interface Mailer {
  readonly provider: Config['EMAIL_PROVIDER'];
  send(mail: Mail): Promise<void>;
  close(): Promise<void>;
}

type MailerConfig = Pick<
  Config,
  'EMAIL_PROVIDER' | 'EMAIL_FROM' | 'SMTP_HOST' | 'SMTP_PORT' | 'SMTP_SECURE' | 'SMTP_USER' | 'SMTP_PASS'
>;

export function createMailer(config: MailerConfig, db: Db): Mailer {
  if (config.EMAIL_PROVIDER === 'MOCK') {
    return {
      provider: 'MOCK',
      async send(mail) {
        await db
          .insertInto('email_logs')
          .values({
            to: mail.to,
            subject: mail.subject,
            template: mail.template,
            text: mail.text,
            html: mail.html ?? null,
            link: mail.link ?? null,
          })
          .execute();
      },
      async close() {},
    };
  }
  const transport = import('nodemailer').then(({ default: nodemailer }) =>
    nodemailer.createTransport({
      host: config.SMTP_HOST,
      port: config.SMTP_PORT,
      secure: config.SMTP_SECURE,
      auth: config.SMTP_USER ? { user: config.SMTP_USER, pass: config.SMTP_PASS ?? '' } : undefined,
      // nodemailer's defaults wait minutes for a server that accepts the connection and says nothing.
      connectionTimeout: SMTP_TIMEOUT_MS,
      greetingTimeout: SMTP_TIMEOUT_MS,
      socketTimeout: SMTP_TIMEOUT_MS,
    }),
  );
  const sending = new Set<Promise<unknown>>();
  return {
    provider: 'SMTP',
    async send(mail) {
      const sent = transport.then((t) =>
        t.sendMail({ from: config.EMAIL_FROM, to: mail.to, subject: mail.subject, text: mail.text, html: mail.html }),
      );
      sending.add(sent);
      try {
        await sent;
      } finally {
        sending.delete(sent);
      }
    },
    /** Lets the mails on their way finish (at most SMTP_TIMEOUT_MS), then closes the connections. */
    async close() {
      await settlesWithin(SMTP_TIMEOUT_MS, Promise.allSettled([...sending]));
      (await transport).close();
    },
  };
}

/** How long the SMTP server may take to connect, greet, or answer any one command. */
const SMTP_TIMEOUT_MS = 10_000;

/**
 * Sends a mail that accompanies a change already made (a registration, an invitation, a reset link): a
 * failure is logged, not thrown, so the change stands and the user can ask for the mail again. Over SMTP
 * the request does not wait for the mail server: its speed would tell a forgot-password caller whether the
 * address has an account, and a stalled server would hold every such request. MOCK writes its row before
 * the answer, so the log is complete when the client reads it.
 */
export async function sendAfterCommit(deps: { mailer: Mailer; logger: Logger }, mail: Mail): Promise<void> {
  const sent = deps.mailer
    .send(mail)
    .catch((err: unknown) => deps.logger.error({ err, template: mail.template }, 'sending mail failed'));
  if (deps.mailer.provider === 'MOCK') await sent;
}
