// Accounts the settings single out: demo accounts (AI_DEMO_RESTRICTED_EMAILS: no real generation, no real
// payments, no API key or webhook changes) and test accounts (AI_TEST_USER_EMAILS: a small monthly cap).
import type { Config } from './config.js';

/** The demo accounts' emails, lower-cased as users.email is (for lookups in SQL). */
export const demoAccountEmails = (config: Pick<Config, 'AI_DEMO_RESTRICTED_EMAILS'>): string[] =>
  config.AI_DEMO_RESTRICTED_EMAILS;

export const isDemoAccount = (config: Pick<Config, 'AI_DEMO_RESTRICTED_EMAILS'>, email: string) =>
  demoAccountEmails(config).includes(email.toLowerCase());

export const isTestAccount = (config: Pick<Config, 'AI_TEST_USER_EMAILS'>, email: string) =>
  config.AI_TEST_USER_EMAILS.includes(email.toLowerCase());
