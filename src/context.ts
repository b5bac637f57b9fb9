import { deleteIdleBuckets } from '../db/api-keys';
import type { DB } from '../db/connection';
import type { Config } from './config';
import { openDatabase } from './database';
import { countWebhookAttempts, createMetrics, type Metrics } from './http/metrics';
import { type DemoKeys, seedDemoOnFirstStart } from './local/demo';
import type { RenderPool } from './pdf/render-pool';
import type { StartPhases } from './start-phases';
import { startWebhookDelivery } from './webhooks/worker';

/** What the HTTP application uses (src/http/app.ts), passed in so that nothing of it is module-global. */
export interface AppContext {
  readonly config: Config;
  readonly db: DB;
  /** Worker threads that render the activity report's PDF off the event loop. */
  readonly renderPool: RenderPool;
  readonly metrics: Metrics;
}

/** The server's context: the application's, the demo keys of a first start, and the background work. */
export interface ServerContext extends AppContext {
  readonly demo: DemoKeys | null;
  /** Where the background parts log (the server's logger, once it exists). */
  useLogger(log: Logger): void;
  /** Stops the background work (the webhook attempts in flight get `webhookTimeoutMs` at most), then the render pool and the database. */
  close(webhookTimeoutMs: number): Promise<void>;
}

interface Logger {
  debug(object: object, message: string): void;
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
}

/**
 * Connections kept open when idle: enough for a client's requests one after another (a page's
 * count beside its key's statement). More open as the load asks, and close after 10 s idle.
 */
export const keptDatabaseConnections = 4;

/**
 * Everything a server holds for its life, opened here in the order it depends on and closed in
 * `close` in the reverse order: the database (embedded unless DATABASE_URL; migrated), the demo
 * organisation of a first start, the metrics, the webhook delivery worker and the sweeper of idle
 * rate-limit counters. The PDF render pool is handed in, already warming up (the server starts it
 * first, src/server.ts), and closed here with the rest; the webhook worker polls once it is warm.
 */
export async function openServerContext(
  config: Config,
  renderPool: RenderPool,
  startPhases: Pick<StartPhases, 'track'>,
  renderPoolWarmedUp: Promise<unknown>,
): Promise<ServerContext> {
  let log: Logger | null = null;
  let closing = false;
  const database = await openDatabase(config, {
    poolSize: 20,
    keptConnections: keptDatabaseConnections,
    serving: true,
    startPhases,
    // While stopping, the database closing our connections is expected (Ctrl-C reaches both).
    onConnectionLost: (error) => {
      if (!closing) log?.warn({ err: { message: error.message } }, 'connexion inactive à la base perdue : elle sera rouverte');
    },
  });
  const demo = await startPhases.track('la création de l’organisation de démonstration', seedDemoOnFirstStart(database.db, config));
  const metrics = createMetrics(database.db);
  const forwardingLog: Logger = {
    debug: (object, message) => log?.debug(object, message),
    info: (object, message) => log?.info(object, message),
    warn: (object, message) => log?.warn(object, message),
  };
  const webhooks = await startPhases.track(
    'le démarrage de l’envoi des webhooks (pg-boss)',
    startWebhookDelivery({
      connectionString: database.connectionString,
      db: database.db,
      config,
      log: forwardingLog,
      onAttempts: countWebhookAttempts(metrics),
      // A backlog of deliveries waits for the warm-up: the start is its one user of the cores.
      deliverAfter: renderPoolWarmedUp,
    }),
  );
  const sweeper = setInterval(() => {
    deleteIdleBuckets(database.db, config.rateLimitWindowSeconds).catch((error) =>
      log?.warn({ err: { message: error.message } }, 'nettoyage des compteurs de débit'),
    );
  }, 60_000);
  sweeper.unref();

  return {
    config,
    db: database.db,
    renderPool,
    metrics,
    demo,
    useLogger(logger) {
      log = logger;
    },
    async close(webhookTimeoutMs) {
      closing = true;
      clearInterval(sweeper);
      // Each part is closed even when one before it fails, the database last: the worker uses it.
      const parts: [string, () => Promise<void>][] = [
        ['le worker des webhooks', () => webhooks.stop(webhookTimeoutMs)],
        ['le rendu des PDF', () => renderPool.close()],
        ['la base de données', () => database.close()],
      ];
      for (const [name, closePart] of parts) {
        await closePart().catch((error: Error) => log?.warn({ err: { message: error.message } }, `arrêt : fermeture impossible (${name})`));
      }
    },
  };
}
