// Entry point of `npm start`: parse the settings (a bad value stops here, naming the variable), boot, and
// shut down in order on SIGTERM / SIGINT.
import { loadConfigOrExit } from './config.js';
import { createLogger, exitAfterLogs } from './logger.js';
import { startServer } from './server.js';

const { config, warning } = loadConfigOrExit();
const logger = createLogger(config);
if (warning) logger.warn(warning);

try {
  const server = await startServer(config, logger);
  logger.info(`API ready at ${server.url} (docs at ${server.url}/docs)`);
  const shutdown = (signal: string) => {
    logger.info({ signal }, 'shutting down: no new connections, finishing in-flight requests');
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
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
} catch (err) {
  logger.fatal({ err }, 'start-up failed');
  await exitAfterLogs(logger, 1);
}
