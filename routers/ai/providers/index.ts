import type { Config } from '../../../server/config.js';
import { createMockProvider } from './mock.js';
import { createProviderA } from './provider-a.js';
import { createProviderB } from './provider-b.js';
import type { TextProvider } from './types.js';

/** The provider AI_PROVIDER selects. Built at start-up; a missing key is reported, never fatal. */
export function createTextProvider(config: Config): TextProvider {
  if (config.AI_PROVIDER === 'PROVIDER_A') return createProviderA(config);
  if (config.AI_PROVIDER === 'PROVIDER_B') return createProviderB(config);
  return createMockProvider();
}
