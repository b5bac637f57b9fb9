import type { FastifyInstance } from 'fastify';
import { buildApp, apiPrefix } from './app';
import { loadConfig } from './config';
import { openDatabase } from './database';
import { deleteIdleBuckets } from '../db/api-keys';
import { seedDemoOnFirstStart } from './demo';
import { startWebhookDelivery } from './webhooks/worker';

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
    new Promise<boolean>((resolve) => { timer = setTimeout(resolve, deadlineMs, true); }),
  ]);
  if (late) {
    app.log.warn({ deadlineMs }, 'arrêt : des connexions étaient encore ouvertes au terme du délai, elles sont fermées');
    app.server.closeAllConnections();
    await closed;
  }
  clearTimeout(timer);
  clearInterval(reaper);
}

/** `make run` / `npm start`: database (embedded unless DATABASE_URL), migrations, demo, server. */
async function main(): Promise<void> {
  const config = loadConfig();
  let stopping = false;
  let log: { warn(object: object, message: string): void } | null = null;
  const database = await openDatabase(config, {
    poolSize: 20,
    serving: true,
    // While stopping, the database closing our connections is expected (Ctrl-C reaches both).
    onConnectionLost: (error) => { if (!stopping) log?.warn({ err: { message: error.message } }, 'connexion inactive à la base perdue : elle sera rouverte'); },
  });
  const demo = await seedDemoOnFirstStart(database.db, config);
  const app = await buildApp({ config, db: database.db });
  log = app.log;
  const webhooks = await startWebhookDelivery({
    connectionString: database.connectionString, db: database.db, config, log: app.log,
    onAttempts: (succeeded, failed) => {
      app.metrics.webhookAttempts.inc({ outcome: 'succeeded' }, succeeded);
      app.metrics.webhookAttempts.inc({ outcome: 'failed' }, failed);
    },
  });

  const sweeper = setInterval(() => {
    deleteIdleBuckets(database.db, config.rateLimitWindowSeconds).catch((error) => app.log.warn({ err: { message: error.message } }, 'nettoyage des compteurs de débit'));
  }, 60_000);
  sweeper.unref();

  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const started = Date.now();
    app.log.info(`${signal} reçu : arrêt propre (au plus ${Math.ceil(config.shutdownTimeoutMs / 1000)} s pour les requêtes en cours)`);
    app.startDraining();
    clearInterval(sweeper);
    await closeWithin(app, config.shutdownTimeoutMs);
    // The webhook attempts in flight get what is left of the deadline, and at least a second.
    await webhooks.stop(Math.max(1_000, config.shutdownTimeoutMs - (Date.now() - started)));
    await database.close();
    app.log.info('arrêté');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  await app.listen({ port: config.port, host: config.host });
  // The port actually bound: PORT=0 asks the system for a free one.
  const { port } = app.server.address() as { port: number };
  const base = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}${apiPrefix}`;
  const lines = [
    '',
    `API partenaires prête : ${base}`,
    `Documentation : ${base}/docs   (document : ${base}/openapi.yaml)`,
  ];
  if (demo) {
    lines.push(
      `Organisation de démonstration : ${demo.orgName} (${demo.orgId})`,
      `  clé lecture  : ${demo.readKey}`,
      `  clé écriture : ${demo.writeKey}`,
      `Essai : curl -H "Authorization: Bearer ${demo.readKey}" "${base}/summary"`,
    );
  }
  process.stdout.write(lines.join('\n') + '\n\n');
}

main().catch((error) => {
  process.stderr.write(`Démarrage impossible : ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
