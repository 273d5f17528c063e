// Accounts the settings single out: demo accounts (AI_DEMO_RESTRICTED_EMAILS: no real generation, no real
// payments, no API key or webhook changes) and test accounts (AI_TEST_USER_EMAILS: a small monthly cap).
import type { Config } from './config.js';

export const isDemoAccount = (config: Pick<Config, 'AI_DEMO_RESTRICTED_EMAILS'>, email: string) =>
  config.AI_DEMO_RESTRICTED_EMAILS.includes(email.toLowerCase());

export const isTestAccount = (config: Pick<Config, 'AI_TEST_USER_EMAILS'>, email: string) =>
  config.AI_TEST_USER_EMAILS.includes(email.toLowerCase());
