// Entry point of `npm start`: parse the settings (a bad value stops here, naming the variable), boot, and
// shut down in order on SIGTERM / SIGINT: drain, finish in-flight requests, close, exit 0. A second signal
// cuts the drain short (Ctrl-C twice), the orderly close still follows.
import { loadConfigOrExit } from './config.js';
import { createLogger, exitAfterLogs } from './logger.js';
import { startServer } from './server.js';

const { config, warning } = loadConfigOrExit();
const logger = createLogger(config);
if (warning) logger.warn(warning);

try {
  const server = await startServer(config, logger);
  logger.info(`API ready at ${server.url} (docs at ${server.url}/docs)`);
  let signals = 0;
  const shutdown = (signal: string) => {
    if (++signals > 1) {
      logger.info({ signal }, 'shutting down without waiting for the rest of the drain');
      void server.close({ drain: false });
      return;
    }
    logger.info({ signal }, 'shutting down: draining, then finishing in-flight requests');
    server.close().then(
      () => {
        logger.info('shutdown complete');
        void exitAfterLogs(logger, 0);
      },
      (err) => {
        logger.error({ err }, 'shutdown failed');
        void exitAfterLogs(logger, 1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
} catch (err) {
  logger.fatal({ err }, 'start-up failed');
  await exitAfterLogs(logger, 1);
}
