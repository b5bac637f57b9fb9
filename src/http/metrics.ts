import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { type DB, poolOf } from '../../db/connection';
import { type DeliveryQueueState, readDeliveryQueue } from '../../db/webhooks';

/**
 * Prometheus metrics of one server process (prom-client), in a registry of its own: requests by
 * route template, method and status with their durations, rate-limit refusals, webhook attempts by
 * outcome, and, read from the database at each scrape, the webhook queue (depth, age of the oldest
 * due delivery) and the disabled endpoints. Served at /metrics.
 */
export interface Metrics {
  readonly registry: Registry;
  readonly requests: Counter<'route' | 'method' | 'status'>;
  readonly requestDuration: Histogram<'route' | 'method' | 'status'>;
  readonly rateLimitRefusals: Counter<'bucket'>;
  /** `succeeded`; `failed`, to be retried; `dead`, failed and the delivery's last. */
  readonly webhookAttempts: Counter<'outcome'>;
}

/** The webhook worker's `onAttempts` (src/webhooks/worker.ts): one batch's attempts, counted by outcome. */
export function countWebhookAttempts(metrics: Metrics) {
  return (succeeded: number, failed: number, dead: number): void => {
    metrics.webhookAttempts.inc({ outcome: 'succeeded' }, succeeded);
    metrics.webhookAttempts.inc({ outcome: 'failed' }, failed);
    metrics.webhookAttempts.inc({ outcome: 'dead' }, dead);
  };
}

export function createMetrics(db: DB): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'partner_api_' });
  const metrics: Metrics = {
    registry,
    requests: new Counter({
      name: 'partner_api_http_requests_total',
      help: 'Requêtes HTTP, par route, méthode et statut.',
      labelNames: ['route', 'method', 'status'],
      registers: [registry],
    }),
    requestDuration: new Histogram({
      name: 'partner_api_http_request_duration_seconds',
      help: 'Durée des requêtes HTTP (jusqu’à la fin de la réponse), par route, méthode et statut.',
      labelNames: ['route', 'method', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    rateLimitRefusals: new Counter({
      name: 'partner_api_rate_limit_refusals_total',
      help: 'Requêtes refusées par la limite de débit (429), par type de compteur (clé ou adresse).',
      labelNames: ['bucket'],
      registers: [registry],
    }),
    webhookAttempts: new Counter({
      name: 'partner_api_webhook_attempts_total',
      help: 'Tentatives de livraison de webhooks faites par ce processus, par résultat : succeeded (livrée), failed (échec, nouvelle tentative prévue), dead (échec de la dernière tentative).',
      labelNames: ['outcome'],
      registers: [registry],
    }),
  };

  registerQueueGauges(registry, db);
  registerPoolMetrics(registry, db);
  return metrics;
}

/**
 * The database pool of this process, read at each scrape: its connections (lent, idle, requests
 * waiting for one), and its waits for a free connection when all were lent, their time and those
 * refused (503 server_busy). Saturation shows here, apart from the database's own faults.
 */
function registerPoolMetrics(registry: Registry, db: DB): void {
  const { pool, usage } = poolOf(db);
  const gauge = (name: string, help: string, value: () => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(value());
      },
    });
  gauge('partner_api_db_pool_connections', 'Connexions ouvertes du pool de ce processus vers la base.', () => pool.totalCount);
  gauge('partner_api_db_pool_idle_connections', 'Connexions libres du pool de ce processus.', () => pool.idleCount);
  gauge('partner_api_db_pool_waiting_requests', 'Demandes de connexion en attente d’une connexion libre.', () => pool.waitingCount);
  /** A counter that follows a running total of the pool's usage. */
  const counter = (name: string, help: string, total: () => number) => {
    let counted = 0;
    return new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.inc(total() - counted);
        counted = total();
      },
    });
  };
  counter(
    'partner_api_db_pool_waits_total',
    'Attentes d’une connexion libre, toutes les connexions du pool étant prises.',
    () => usage.waits,
  );
  counter('partner_api_db_pool_wait_seconds_total', 'Temps passé à attendre une connexion libre (secondes).', () => usage.waitSeconds);
  counter(
    'partner_api_db_pool_refusals_total',
    'Requêtes sans connexion libre dans le délai (DB_CONNECT_TIMEOUT_MS) : 503 server_busy.',
    () => usage.refusals,
  );
}

/** The webhook queue's gauges, read from the database at each scrape: the queue is shared by every server process. */
function registerQueueGauges(registry: Registry, db: DB): void {
  let reading: Promise<DeliveryQueueState> | null = null;
  /** One query for the gauges of one scrape. */
  const readQueue = () =>
    (reading ??= readDeliveryQueue(db).finally(() =>
      setTimeout(() => {
        reading = null;
      }, 100),
    ));
  const queueGauge = (name: string, help: string, value: (state: DeliveryQueueState) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      // Without the database the scrape still answers, with NaN for what it could not read.
      async collect() {
        this.set(await readQueue().then(value, () => Number.NaN));
      },
    });
  queueGauge(
    'partner_api_webhook_queue_pending',
    'Livraisons de webhooks en attente (dues, programmées, ou mises de côté tant que leur point de réception est désactivé), tous processus confondus.',
    (q) => q.pending,
  );
  queueGauge(
    'partner_api_webhook_queue_due',
    'Livraisons de webhooks dont la prochaine tentative (sa tâche) est due maintenant.',
    (q) => q.due,
  );
  queueGauge(
    'partner_api_webhook_queue_oldest_due_seconds',
    'Âge (secondes) de la plus ancienne livraison due et pas encore tentée ; 0 sans retard.',
    (q) => q.oldest_due_seconds ?? 0,
  );
  queueGauge(
    'partner_api_webhook_endpoints_disabled',
    'Points de réception de webhooks désactivés (échecs répétés ou opérateur).',
    (q) => q.disabled,
  );
}
