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

/** The page of the web app where a user reviews sign-in methods and sessions. */
const securityLink = (appUrl: string) => `${appUrl.replace(/\/+$/, '')}/settings/security`;

export function mfaEnabledMail(opts: { to: string; name: string; appUrl: string }): Mail {
  return actionMail({
    to: opts.to,
    subject: 'Two-factor sign-in is on',
    template: 'mfa-enabled',
    greeting: `Hi ${opts.name},`,
    lines: [
      'Two-factor sign-in is now on for your account: signing in asks for a code of your authenticator app.',
      'If it was not you, reset your password and contact support.',
    ],
    action: 'Review your security settings',
    link: securityLink(opts.appUrl),
  });
}

export function mfaDisabledMail(opts: { to: string; name: string; appUrl: string; byAdmin?: boolean }): Mail {
  return actionMail({
    to: opts.to,
    subject: 'Two-factor sign-in is off',
    template: 'mfa-disabled',
    greeting: `Hi ${opts.name},`,
    lines: [
      opts.byAdmin
        ? 'An administrator turned two-factor sign-in off for your account, as asked. Turn it on again soon.'
        : 'Two-factor sign-in is now off for your account: signing in asks for your password only.',
      'If you did not ask for this, reset your password and contact support.',
    ],
    action: 'Review your security settings',
    link: securityLink(opts.appUrl),
  });
}

export function secondFactorLockedMail(opts: {
  to: string;
  name: string;
  appUrl: string;
  failures: number;
  minutes: number;
}): Mail {
  return actionMail({
    to: opts.to,
    subject: 'Two-factor checks of your account are locked for a while',
    template: 'mfa-locked',
    greeting: `Hi ${opts.name},`,
    lines: [
      `${opts.failures} wrong two-factor codes were entered for your account within ${opts.minutes} minutes, so ` +
        `codes are not checked for the rest of those ${opts.minutes} minutes.`,
      'If this was not you, someone has your password or a signed-in session: change your password and sign ' +
        'out your other sessions.',
    ],
    action: 'Review your security settings',
    link: securityLink(opts.appUrl),
  });
}

export function newSignInMail(opts: {
  to: string;
  name: string;
  appUrl: string;
  userAgent: string | undefined;
  ip: string;
  at: Date;
}): Mail {
  return actionMail({
    to: opts.to,
    subject: 'New sign-in to your account',
    template: 'new-sign-in',
    greeting: `Hi ${opts.name},`,
    lines: [
      `Your account was signed in to from a new device on ${opts.at.toUTCString()}.`,
      `Device: ${opts.userAgent ?? 'unknown'}. Address: ${opts.ip}.`,
      'If it was you, nothing to do. If not, end that session and change your password.',
    ],
    action: 'Review your sessions',
    link: securityLink(opts.appUrl),
  });
}

/** A web app page (APP_URL + path). */
const appPage = (appUrl: string, path: string) => `${appUrl.replace(/\/+$/, '')}${path}`;

export function emailChangeConfirmationMail(opts: { to: string; name: string; link: string; validMinutes: number }) {
  return actionMail({
    to: opts.to,
    subject: 'Confirm your new e-mail address',
    template: 'email-change-confirmation',
    greeting: `Hi ${opts.name},`,
    lines: [
      `You asked to sign in with this address from now on. Confirm it within ${opts.validMinutes} minutes; the link works once.`,
      'If you did not ask for this, ignore this mail: nothing changes.',
    ],
    action: 'Confirm the new address',
    link: opts.link,
  });
}

export function emailChangeNoticeMail(opts: { to: string; name: string; appUrl: string }) {
  return actionMail({
    to: opts.to,
    subject: 'Your e-mail address is about to change',
    template: 'email-change-notice',
    greeting: `Hi ${opts.name},`,
    lines: [
      'Someone signed in to your account asked to move it to another e-mail address; it changes once the new address confirms.',
      'If it was not you, change your password and end your other sessions now.',
    ],
    action: 'Review your security settings',
    link: securityLink(opts.appUrl),
  });
}

export function accountDeletedMail(opts: { to: string; name: string; appUrl: string }) {
  return actionMail({
    to: opts.to,
    subject: 'Your account is deleted',
    template: 'account-deleted',
    greeting: `Hi ${opts.name},`,
    lines: [
      'Your account and the workspaces only you belonged to are deleted, as you asked. This address can register again.',
      'This is the last mail we send to this address about the account.',
    ],
    action: 'Visit the service',
    link: appPage(opts.appUrl, '/'),
  });
}

export function dataExportReadyMail(opts: {
  to: string;
  name: string;
  appUrl: string;
  exportId: string;
  hours: number;
}) {
  return actionMail({
    to: opts.to,
    subject: 'Your data export is ready',
    template: 'data-export-ready',
    greeting: `Hi ${opts.name},`,
    lines: [
      `The export of your data you asked for is ready. Download it from your account settings within ${opts.hours} hours; it is deleted afterwards.`,
    ],
    action: 'Download your data',
    link: appPage(opts.appUrl, `/settings/account?export=${encodeURIComponent(opts.exportId)}`),
  });
}

/** A change of a workspace's sign-in set-up (domains, SSO connections, SCIM tokens), mailed to its owners. */
export function signInSetupChangedMail(opts: { to: string; workspaceName: string; change: string; appUrl: string }) {
  return actionMail({
    to: opts.to,
    subject: `Sign-in settings of ${opts.workspaceName} changed`,
    template: 'sign-in-setup-changed',
    greeting: 'Hello,',
    lines: [
      `${opts.change} (workspace "${opts.workspaceName}").`,
      'Owners of the workspace get this mail for every change of its domains, single sign-on and directory sync. If nobody of you made it, review the settings now.',
    ],
    action: 'Review the settings',
    link: appPage(opts.appUrl, '/settings/workspace/security'),
  });
}

export function trialEndingMail(opts: {
  to: string;
  name: string;
  workspaceName: string;
  trialEndsAt: Date;
  appUrl: string;
}): Mail {
  return actionMail({
    to: opts.to,
    subject: `Your trial of ${opts.workspaceName} ends soon`,
    template: 'billing-trial-ending',
    greeting: `Hi ${opts.name},`,
    lines: [
      `The trial of the workspace "${opts.workspaceName}" ends on ${opts.trialEndsAt.toISOString().slice(0, 10)}.`,
      'After that, the payment method on file is charged; without one, the workspace goes back to the free plan.',
    ],
    action: 'Review billing',
    link: appPage(opts.appUrl, '/settings/billing'),
  });
}

export function paymentFailedMail(opts: {
  to: string;
  name: string;
  workspaceName: string;
  graceDays: number;
  appUrl: string;
}): Mail {
  return actionMail({
    to: opts.to,
    subject: `Payment failed for ${opts.workspaceName}`,
    template: 'billing-payment-failed',
    greeting: `Hi ${opts.name},`,
    lines: [
      `We could not collect the latest payment of the workspace "${opts.workspaceName}".`,
      `Its plan stays for ${opts.graceDays} days; update the payment method before then, or the workspace goes back to the free plan.`,
    ],
    action: 'Update payment method',
    link: appPage(opts.appUrl, '/settings/billing'),
  });
}
