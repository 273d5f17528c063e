// Entry point of `npm start`: parse the settings (a bad value stops here, naming the variable), boot, and
// shut down in order on SIGTERM / SIGINT: drain, finish in-flight requests, close, exit 0. A second signal
// cuts the drain short (Ctrl-C twice); the orderly close still follows.
import { loadConfigOrExit } from './platform/config.js';
import { createLogger, exitAfterLogs } from './platform/logger.js';
import { startServer, type RunningServer } from './server.js';

const { config, warning } = loadConfigOrExit();
const logger = createLogger(config);
if (warning) logger.warn(warning);

let server: RunningServer | undefined;
let firstSignal: string | undefined;

function stop(running: RunningServer, signal: string, opts: { drain: boolean }) {
  const what = opts.drain ? 'draining, then finishing in-flight requests' : 'finishing in-flight requests';
  logger.info({ signal }, `shutting down: ${what}`);
  running.close(opts).then(
    () => {
      logger.info('shutdown complete');
      void exitAfterLogs(logger, 0);
    },
    (err) => {
      logger.error({ err }, 'shutdown failed');
      void exitAfterLogs(logger, 1);
    },
  );
}

// The handlers go in before the start-up: a signal that arrives while the server starts (or just after it
// started listening) must not kill the process by the default action. It stops the server once it is up,
// without a drain, as no load balancer has seen it healthy yet.
function onSignal(signal: string) {
  if (firstSignal === undefined) {
    firstSignal = signal;
    if (server) stop(server, signal, { drain: true });
    else logger.info({ signal }, 'signal during start-up: shutting down once started');
  } else if (server) {
    logger.info({ signal }, 'shutting down without waiting for the rest of the drain');
    void server.close({ drain: false });
  } else {
    logger.warn({ signal }, 'second signal during start-up: exiting at once');
    void exitAfterLogs(logger, 1);
  }
}
process.on('SIGTERM', () => onSignal('SIGTERM'));
process.on('SIGINT', () => onSignal('SIGINT'));

try {
  server = await startServer(config, logger);
  // The address listened on, as the socket reports it (0.0.0.0: every interface; the docs link is local).
  const everywhere = server.address !== server.url ? ', every interface' : '';
  logger.info(`API ready at ${server.address}${everywhere} (docs at ${server.url}/docs)`);
  if (firstSignal) stop(server, firstSignal, { drain: false });
} catch (err) {
  logger.fatal({ err }, 'start-up failed');
  await exitAfterLogs(logger, 1);
}
