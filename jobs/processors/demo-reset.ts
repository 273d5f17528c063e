// Processor of the maintenance queue's `demo-reset` job (DEMO_RESET_CRON): the demo reset on a schedule
// (demo/reset.ts, handed in by the worker's composition root). A job queued before the setting was emptied
// does nothing.
import type { Config } from '../../server/platform/config.js';
import type { Logger } from '../../server/platform/logger.js';

/** What a reset did. */
export interface DemoResetSummary {
  removed: Record<string, number>;
  written: Record<string, number>;
  accounts: Array<{ email: string }>;
}

export function demoReset(deps: {
  reset: () => Promise<DemoResetSummary>;
  config: Pick<Config, 'DEMO_RESET_CRON'>;
  logger: Logger;
}) {
  const { logger } = deps;
  return async () => {
    if (!deps.config.DEMO_RESET_CRON) return undefined;
    const summary = await deps.reset().catch((err: unknown) => {
      logger.error({ err }, 'demo reset failed');
      throw err;
    });
    const accounts = summary.accounts.map((a) => a.email);
    logger.info({ removed: summary.removed, written: summary.written, accounts }, 'demo data reset');
    return { removed: summary.removed, written: summary.written };
  };
}
