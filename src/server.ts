import type { FastifyInstance } from 'fastify';
import { apiPrefix, buildApp } from './app';
import { loadConfig } from './config';
import { openServerContext } from './context';
import { isDatabaseUnavailable } from './database-faults';

/**
 * Stops accepting connections, lets the requests in flight finish, closes keep-alive connections
 * as they fall idle, and past `deadlineMs` closes whatever is left (a client that stopped reading,
 * an export still going): a stop never outlasts an orchestrator's grace period.
 */
async function closeWithin(app: FastifyInstance, deadlineMs: number): Promise<void> {
  const closed = app.close();
  const reaper = setInterval(() => app.server.closeIdleConnections(), 100);
  let timer: NodeJS.Timeout | undefined;
  const late = await Promise.race([
    closed.then(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(resolve, deadlineMs, true);
    }),
  ]);
  if (late) {
    app.log.warn({ deadlineMs }, 'arrêt : des connexions étaient encore ouvertes au terme du délai, elles sont fermées');
    app.server.closeAllConnections();
    await closed;
  }
  clearTimeout(timer);
  clearInterval(reaper);
}

/**
 * How long past SHUTDOWN_TIMEOUT_MS the rest of a stop (the webhook worker, the database) may take
 * before the process leaves anyway: within the 5 s of grace the README asks of orchestrators.
 */
const shutdownWatchdogMarginMs = 3_000;

/**
 * A signal repeated within this time is the same request to stop: from a terminal, `npm start`
 * passes Ctrl-C on to the server, which also gets it from the terminal. Later, it means "now".
 */
const repeatedSignalWindowMs = 1_000;

/** The lines `make run` prints once the server listens. */
function welcome(base: string, context: Awaited<ReturnType<typeof openServerContext>>): string {
  const lines = ['', `API partenaires prête : ${base}`, `Documentation : ${base}/docs   (document : ${base}/openapi.yaml)`];
  const demo = context.demo;
  if (demo) {
    lines.push(
      `Organisation de démonstration : ${demo.orgName} (${demo.orgId})`,
      `  clé lecture  : ${demo.readKey}`,
      `  clé écriture : ${demo.writeKey}`,
      `Essai : curl -H "Authorization: Bearer ${demo.readKey}" "${base}/summary"`,
    );
  }
  return lines.join('\n') + '\n\n';
}

/** `make run` / `npm start`: settings, the context (database, demo, workers), the app, listen, stop on a signal. */
async function main(): Promise<void> {
  const config = loadConfig();
  const context = await openServerContext(config);
  const app = await buildApp(context);
  context.useLogger(app.log);

  let stopStartedAt: number | null = null;
  const stop = async (signal: string) => {
    if (stopStartedAt !== null) {
      if (Date.now() - stopStartedAt < repeatedSignalWindowMs) return;
      app.log.warn(`${signal} reçu pendant l’arrêt : sortie immédiate, sans attendre la fin des requêtes ni du worker`);
      process.exit(1);
    }
    stopStartedAt = Date.now();
    // Whatever hangs (a database that never answers while the worker stops), leave before the
    // orchestrator's SIGKILL, saying so.
    const watchdogMs = config.shutdownTimeoutMs + shutdownWatchdogMarginMs;
    setTimeout(() => {
      app.log.error(`arrêt toujours en cours après ${Math.ceil(watchdogMs / 1000)} s : sortie forcée`);
      process.exit(1);
    }, watchdogMs).unref();
    app.log.info(`${signal} reçu : arrêt propre (au plus ${Math.ceil(config.shutdownTimeoutMs / 1000)} s pour les requêtes en cours)`);
    app.startDraining();
    await closeWithin(app, config.shutdownTimeoutMs);
    // The webhook attempts in flight get what is left of the deadline, and at least a second.
    await context.close(Math.max(1_000, config.shutdownTimeoutMs - (Date.now() - stopStartedAt)));
    app.log.info('arrêté');
    process.exit(0);
  };
  const onSignal = (signal: string) =>
    stop(signal).catch((error) => {
      app.log.error({ err: error }, 'arrêt interrompu par une erreur');
      process.exit(1);
    });
  process.on('SIGINT', () => void onSignal('SIGINT'));
  process.on('SIGTERM', () => void onSignal('SIGTERM'));
  // pg-boss 10 does not await the statements that complete or fail a batch of jobs, so when the
  // database is lost at that moment their rejection reaches no one. That fault is logged and
  // survived (the delivery rows are the record: the sweep queues again what was cut short); any
  // other unhandled rejection still ends the process, as Node does by default.
  process.on('unhandledRejection', (reason) => {
    if (isDatabaseUnavailable(reason)) {
      app.log.warn({ err: { message: (reason as Error).message } }, 'base de données indisponible pour une tâche de fond');
      return;
    }
    app.log.fatal({ err: reason }, 'erreur non traitée : arrêt du processus');
    process.exit(1);
  });

  await app.listen({ port: config.port, host: config.host });
  // The port actually bound: PORT=0 asks the system for a free one.
  const { port } = app.server.address() as { port: number };
  process.stdout.write(welcome(`http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}${apiPrefix}`, context));
}

main().catch((error) => {
  process.stderr.write(`Démarrage impossible : ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
