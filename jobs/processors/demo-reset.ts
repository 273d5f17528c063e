// Processor of the maintenance queue's `demo-reset` job (DEMO_RESET_CRON): demo/reset.ts's resetDemo on a
// schedule. A job queued before the setting was emptied does nothing.
import type { Config } from '../../server/platform/config.js';
import type { Logger } from '../../server/platform/logger.js';
import type { DemoDeps } from '../../demo/data.js';
import { resetDemo } from '../../demo/reset.js';

export function demoReset(deps: { demo: DemoDeps; config: Pick<Config, 'DEMO_RESET_CRON'>; logger: Logger }) {
  const { logger } = deps;
  return async () => {
    if (!deps.config.DEMO_RESET_CRON) return undefined;
    const summary = await resetDemo(deps.demo, { via: 'schedule' }).catch((err: unknown) => {
      logger.error({ err }, 'demo reset failed');
      throw err;
    });
    const accounts = summary.accounts.map((a) => a.email);
    logger.info({ removed: summary.removed, written: summary.written, accounts }, 'demo data reset');
    return { removed: summary.removed, written: summary.written };
  };
}
