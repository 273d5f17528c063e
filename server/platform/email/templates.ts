// The text of every mail the service sends. Each returns a Mail ready for Mailer.send.
import type { Mail } from './mailer.js';

/** A link of the web app (APP_URL) carrying a single-use token. */
export const tokenLink = (appUrl: string, path: string, token: string) =>
  `${appUrl.replace(/\/+$/, '')}${path}?token=${encodeURIComponent(token)}`;

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function actionMail(opts: {
  to: string;
  subject: string;
  template: string;
  greeting: string;
  lines: string[];
  action: string;
  link: string;
}): Mail {
  const text = [opts.greeting, '', ...opts.lines, '', `${opts.action}: ${opts.link}`].join('\n');
  const html = [
    `<p>${escapeHtml(opts.greeting)}</p>`,
    ...opts.lines.map((l) => `<p>${escapeHtml(l)}</p>`),
    `<p><a href="${escapeHtml(opts.link)}">${escapeHtml(opts.action)}</a></p>`,
  ].join('\n');
  return { to: opts.to, subject: opts.subject, template: opts.template, text, html, link: opts.link };
}

export function emailVerificationMail(opts: { to: string; name: string; link: string; validHours: number }): Mail {
  return actionMail({
    to: opts.to,
    subject: 'Verify your e-mail address',
    template: 'email-verification',
    greeting: `Hi ${opts.name},`,
    lines: [`Please verify your e-mail address. The link is valid for ${opts.validHours} hours.`],
    action: 'Verify e-mail address',
    link: opts.link,
  });
}

export function passwordResetMail(opts: { to: string; name: string; link: string; validMinutes: number }): Mail {
  return actionMail({
    to: opts.to,
    subject: 'Reset your password',
    template: 'password-reset',
    greeting: `Hi ${opts.name},`,
    lines: [
      `Someone asked to reset the password of your account. The link is valid for ${opts.validMinutes} minutes and works once.`,
      'If it was not you, ignore this mail: your password stays as it is.',
    ],
    action: 'Reset password',
    link: opts.link,
  });
}

export function invitationMail(opts: {
  to: string;
  workspaceName: string;
  inviterName: string;
  role: string;
  link: string;
  validDays: number;
}): Mail {
  return actionMail({
    to: opts.to,
    subject: `You are invited to ${opts.workspaceName}`,
    template: 'workspace-invitation',
    greeting: 'Hello,',
    lines: [
      `${opts.inviterName} invited you to the workspace "${opts.workspaceName}" as ${opts.role.toLowerCase()}.`,
      `The invitation is valid for ${opts.validDays} days and works once. Sign in (or create an account) with this address to accept it.`,
    ],
    action: 'Accept the invitation',
    link: opts.link,
  });
}
