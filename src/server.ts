import { inspect } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { findLearner } from '../db/learners';
import { type Config, loadConfig } from './config';
import type { ServerContext } from './context';
import { isDatabaseUnavailable } from './database-faults';
import { createRenderPool, type RenderPoolWarmUp } from './pdf/render-pool';
import { watchStartPhases } from './start-phases';

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

/** `2345` ms -> `2,3 s`. */
const seconds = (ms: number) => `${(ms / 1000).toFixed(1).replace('.', ',')} s`;

/** The lines `make run` prints once the server listens. */
function welcome(base: string, context: ServerContext): string {
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

/** What `make run` says when the server cannot listen: the cause and the fix, in one sentence. */
function listenFailure(error: NodeJS.ErrnoException, config: Config): Error {
  const { port, host } = config;
  switch (error.code) {
    case 'EADDRINUSE':
      return new Error(
        `le port ${port} (PORT) est déjà pris sur ${host} par un autre programme, peut-être un autre \`make run\`. ` +
          `Pour y remédier : arrêtez-le, ou choisissez un autre port : PORT=${port === 65535 ? port - 1 : port + 1} make run.`,
      );
    case 'EACCES':
      return new Error(
        `le port ${port} (PORT) est réservé à root sur ce système. Pour y remédier : choisissez un port au-dessus de 1023 (PORT=3000).`,
      );
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
      return new Error(
        `l’adresse ${host} (HOST) n’est pas une adresse de cette machine. Pour y remédier : HOST=127.0.0.1 (ou 0.0.0.0 pour toutes).`,
      );
    default:
      return error;
  }
}

/** The docs page's "Try it out" of the activity report opens on a learner of the demo organisation. */
async function demoLearnerEmail(context: ServerContext): Promise<string | undefined> {
  if (!context.demo) return undefined;
  return (await findLearner(context.db, context.demo.orgId, {}))?.email;
}

/** `make run` / `npm start`: settings, the render workers' warm-up, the context (database, demo, webhooks), the app, listen once warm, stop on a signal. */
async function main(): Promise<void> {
  const config = loadConfig();
  // Until the server is built, a stop request ends the process at once: what it opened goes with
  // it (the embedded PostgreSQL is stopped as the process exits, a demo seed half done rolls back).
  const stopWhileStarting = (signal: NodeJS.Signals) => {
    process.stderr.write(`${signal} reçu pendant le démarrage : arrêt\n`);
    process.exit(0);
  };
  process.on('SIGINT', stopWhileStarting);
  process.on('SIGTERM', stopWhileStarting);
  // The render workers' warm-up (src/pdf/render-pool.ts) is the longest part of a start and needs
  // nothing else: it starts first, and runs in their threads while this one loads the rest of the
  // server (hence the imports below, not at the top of the file), opens the database and builds
  // the app. The server listens only once it is done: no partner's first report pays for it.
  // A start that lasts says on stderr what it still waits for, until it is ready (a failed start
  // exits, below main, and its reports end with it).
  const startPhases = watchStartPhases();
  const renderPool = createRenderPool();
  const renderPoolWarmedUp = startPhases.track('le préchauffage du rendu des PDF', renderPool.warmUp());
  // Awaited once the rest is ready; a failure before then must not count as unhandled.
  renderPoolWarmedUp.catch(() => undefined);
  const [{ openServerContext }, { buildApp }, { apiPrefix }] = await startPhases.track(
    'le chargement du serveur',
    Promise.all([import('./context'), import('./http/app'), import('./openapi-document')]),
  );
  const context = await openServerContext(config, renderPool, startPhases, renderPoolWarmedUp);
  let app: FastifyInstance;
  let renderPoolWarmUp: RenderPoolWarmUp;
  try {
    app = await startPhases.track('la construction de l’API', buildApp(context, { docsLearnerEmail: await demoLearnerEmail(context) }));
    renderPoolWarmUp = await renderPoolWarmedUp;
  } catch (error) {
    await context.close(1_000);
    throw error;
  }
  startPhases.done();
  context.useLogger(app.log);
  const workers = renderPoolWarmUp.workers.length;
  app.log.info(
    { renderWarmUpMs: renderPoolWarmUp.ms, renderWorkers: renderPoolWarmUp.workers, startMs: Math.round(performance.now()) },
    `rendu des PDF préchauffé en ${seconds(renderPoolWarmUp.ms)} (${workers} fil${workers > 1 ? 's' : ''}, ` +
      `pendant le chargement du serveur et l’ouverture de la base) ; prêt à écouter ${seconds(performance.now())} après le lancement`,
  );

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
  process.off('SIGINT', stopWhileStarting);
  process.off('SIGTERM', stopWhileStarting);
  process.on('SIGINT', () => void onSignal('SIGINT'));
  process.on('SIGTERM', () => void onSignal('SIGTERM'));
  // pg-boss 10 does not await the statements that complete or fail a batch of jobs, so when the
  // database is lost at that moment their rejection reaches no one. That fault is logged and
  // survived (pg-boss offers the jobs of what was cut short again once they expire); any
  // other unhandled rejection still ends the process, as Node does by default.
  process.on('unhandledRejection', (reason) => {
    if (isDatabaseUnavailable(reason)) {
      app.log.warn({ err: { message: (reason as Error).message } }, 'base de données indisponible pour une tâche de fond');
      return;
    }
    app.log.fatal({ err: reason }, 'erreur non traitée : arrêt du processus');
    process.exit(1);
  });

  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await app.close();
    await context.close(1_000);
    throw listenFailure(error as NodeJS.ErrnoException, config);
  }
  // The port actually bound: PORT=0 asks the system for a free one.
  const { port } = app.server.address() as { port: number };
  process.stdout.write(welcome(`http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}${apiPrefix}`, context));
}

/** One line, never a stack: a start failure is read by whoever typed `make run`. */
main().catch((error: unknown) => {
  const said = error instanceof Error ? error.message : `erreur inattendue (${inspect(error)})`;
  process.stderr.write(`Démarrage impossible : ${said}\n`);
  process.exit(1);
});
