import pg from 'pg';
import PgBoss from 'pg-boss';
import type { DB } from '../../db/connection';
import {
  type AttemptJob,
  createDeliveryQueue,
  type DueDelivery,
  deliveryChannel,
  deliveryQueue,
  recordAttempts,
  takeDueDeliveries,
} from '../../db/webhooks';
import type { Config } from '../config';
import { createWebhookAgents, postWebhook, type WebhookAgents } from './http-post';
import { signatureHeader } from './signature';

/*
 * The delivery worker of one server process: the half of the flow of db/webhooks.ts that is not
 * SQL. pg-boss hands its pollers batches of jobs, each job one attempt of one delivery (they poll
 * every 0.5 s, and a NOTIFY at the commit of new deliveries wakes one at once); the deliveries the
 * jobs may attempt are signed and POSTed together, and the batch's attempts recorded, retries
 * queued as jobs. Several processes may run it on one database: pg-boss gives a job to one of them,
 * and only the job a delivery names may attempt it.
 */

interface Logger {
  debug(object: object, message: string): void;
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
}

export interface WebhookDeliveryOptions {
  /** The database of the deliveries: pg-boss and the wake-up listener get connections of their own. */
  connectionString: string;
  db: DB;
  config: Pick<
    Config,
    | 'webhookRetryDelaysSeconds'
    | 'webhookTimeoutMs'
    | 'webhookDisableAfter'
    | 'webhookAllowInsecure'
    | 'databaseConnectTimeoutMs'
    | 'databaseQueryTimeoutMs'
  >;
  log?: Logger;
  /** Parallel pollers; each fetches up to `batchSize` jobs at once, and sends their deliveries together. */
  workers?: number;
  batchSize?: number;
  /**
   * Polling starts once this settles (at once without it): the server's start passes the render
   * workers' warm-up, so that a backlog of deliveries does not take the cores it needs to start.
   */
  deliverAfter?: Promise<unknown>;
  /**
   * Counts one batch's attempts by outcome (the server's metrics, `countWebhookAttempts`):
   * succeeded, failed with a retry planned, and failed as the delivery's last attempt (dead).
   */
  onAttempts?: (succeeded: number, failed: number, dead: number) => void;
}

export interface WebhookDelivery {
  /** Stops polling; attempts in flight get at most `timeoutMs` to finish and be recorded. */
  stop(timeoutMs?: number): Promise<void>;
}

/** How often pg-boss looks for jobs whose worker died (their expiry), among other upkeep. */
const maintenanceIntervalSeconds = 15;
/** Waits between attempts to LISTEN again after the connection dropped (the database restarting). */
const relistenDelaysMs = [250, 500, 1000, 2000, 5000];
/** How often the LISTEN connection is asked whether it still answers, and with what. */
const listenHeartbeatMs = 5_000;
export const listenHeartbeatStatement = 'select 1';

const silentLog: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined };

/** What a log needs of a database error (pg's own error objects carry the whole client). */
function briefly(error: unknown): { message: string; code?: string } {
  const { message, code } = error as { message?: unknown; code?: unknown };
  return { message: String(message ?? error), ...(typeof code === 'string' ? { code } : {}) };
}

export async function startWebhookDelivery(options: WebhookDeliveryOptions): Promise<WebhookDelivery> {
  const log = options.log ?? silentLog;
  const state = { stopped: false };
  const boss = await startQueue(options, log, state);
  const agents = createWebhookAgents();
  const pollers = createPollers(boss, deliverBatch(options, agents, log), options);
  const listener = await listenForCommits(options, () => pollers.wakeOne(), log, state);
  // Until the pollers start, a commit wakes no one: their first fetch finds its job.
  const polling = options.deliverAfter
    ? options.deliverAfter.then(
        () => (state.stopped ? undefined : pollers.start()),
        () => undefined,
      )
    : await pollers.start();

  return {
    async stop(timeoutMs = options.config.webhookTimeoutMs + 5_000) {
      state.stopped = true;
      await listener.close();
      await polling;
      // Attempts in flight finish (and are recorded) before the connections close, within the time
      // given; pg-boss fails the jobs of those cut short, and offers them again.
      await boss.stop({ graceful: true, wait: true, timeout: Math.max(1, timeoutMs) });
      agents.close();
    },
  };
}

/**
 * How long one batch of attempts may last: its statements (taking the deliveries, recording the
 * attempts) and its POSTs, each within its time limit, with a margin. pg-boss offers a job again
 * only once this long has passed since it started: by then the attempt of a worker that died, or
 * stopped answering, can no longer be in flight.
 */
export function attemptExpirySeconds(config: Pick<Config, 'webhookTimeoutMs' | 'databaseQueryTimeoutMs'>): number {
  return Math.ceil((config.webhookTimeoutMs + 2 * (config.databaseQueryTimeoutMs + 1000)) / 1000) + 5;
}

/** pg-boss on connections of its own, with its queue; its errors logged briefly, and quietly while stopping. */
async function startQueue(options: WebhookDeliveryOptions, log: Logger, state: { stopped: boolean }): Promise<PgBoss> {
  // The same limits as the server's pool: after a partition or a failover, a poller waits a few
  // seconds on a dead connection, not forever, and the pool replaces it (pg-pool drops a client
  // whose query failed). pg-boss hands its options to pg.Pool, which its types do not say.
  const poolLimits: pg.PoolConfig = {
    connectionTimeoutMillis: options.config.databaseConnectTimeoutMs,
    query_timeout: options.config.databaseQueryTimeoutMs + 1000,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  };
  const boss = new PgBoss({
    connectionString: options.connectionString,
    max: 4,
    application_name: 'partner-api-webhooks',
    ...(poolLimits as object),
    schedule: false,
    supervise: true,
    maintenanceIntervalSeconds,
    migrate: true,
    // The delivery rows are the record; finished jobs need not linger.
    archiveCompletedAfterSeconds: 3600,
    deleteAfterDays: 1,
  });
  boss.on('error', (error) => {
    if (state.stopped) log.debug({ err: briefly(error) }, 'webhooks : erreur de la file pg-boss pendant l’arrêt');
    else log.warn({ err: briefly(error) }, 'webhooks : erreur de la file pg-boss');
  });
  await boss.start();
  await createDeliveryQueue(boss, options.db, attemptExpirySeconds(options.config));
  return boss;
}

/**
 * One batch of jobs: the deliveries they may attempt, signed and POSTed at once, and their
 * attempts recorded. A job whose delivery is not due (delivered, dead, another job named, its
 * endpoint disabled) attempts nothing, and completes.
 */
function deliverBatch(options: WebhookDeliveryOptions, agents: WebhookAgents, log: Logger) {
  const { db, config } = options;
  const policy = { retryDelaysSeconds: config.webhookRetryDelaysSeconds, disableAfter: config.webhookDisableAfter };

  const send = async (delivery: DueDelivery) => {
    const timestamp = Math.floor(Date.now() / 1000);
    const outcome = await postWebhook(agents, {
      url: delivery.url,
      body: delivery.body,
      timeoutMs: config.webhookTimeoutMs,
      allowInsecure: config.webhookAllowInsecure,
      headers: {
        'Content-Type': 'application/json',
        'User-Agent': 'partner-api-webhooks/1.1',
        'X-Service-Event': delivery.event_type,
        'X-Service-Delivery': delivery.id,
        'X-Service-Signature': signatureHeader(delivery.secrets, timestamp, delivery.body),
      },
    });
    return { delivery, outcome };
  };

  return async (jobs: PgBoss.Job<AttemptJob>[]) => {
    const due = await takeDueDeliveries(db, jobs);
    if (due.length === 0) return;
    const attempts = await Promise.all(due.map(send));
    const recorded = await recordAttempts(db, attempts, policy);
    options.onAttempts?.(recorded.succeeded, recorded.failed, recorded.dead);
    log.debug({ webhookAttempts: attempts.length, ...recorded }, 'webhooks : lot de tentatives');
  };
}

/**
 * Parallel pollers of the queue, once started; a full batch is followed by the next fetch without
 * waiting. A commit wakes one of them, one not busy with a batch if there is one: the others would
 * fetch nothing. Two pollers: one fetches and records while the other's POSTs are out. Batches
 * are large because each of pg-boss's fetches sorts every due job (a backlog pays that sort per
 * batch), and no larger, since a batch's POSTs are all in flight at once.
 */
function createPollers(boss: PgBoss, handle: (jobs: PgBoss.Job<AttemptJob>[]) => Promise<void>, options: WebhookDeliveryOptions) {
  const batchSize = options.batchSize ?? 100;
  const workerIds: string[] = [];
  const busy = new Set<string>();
  let next = 0;
  return {
    async start(): Promise<void> {
      for (let i = 0; i < (options.workers ?? 2); i += 1) {
        let id = '';
        id = await boss.work<AttemptJob>(deliveryQueue, { batchSize, pollingIntervalSeconds: 0.5, priority: false }, async (jobs) => {
          busy.add(id);
          try {
            await handle(jobs);
          } finally {
            busy.delete(id);
          }
          if (jobs.length === batchSize) boss.notifyWorker(id);
        });
        workerIds.push(id);
      }
    },
    wakeOne(): void {
      if (workerIds.length === 0) return;
      const inTurn = workerIds.map((_, offset) => workerIds[(next + offset) % workerIds.length]!);
      const chosen = inTurn.find((id) => !busy.has(id)) ?? inTurn[0]!;
      next = (workerIds.indexOf(chosen) + 1) % workerIds.length;
      boss.notifyWorker(chosen);
    },
  };
}

/**
 * One connection LISTENs for committed deliveries and wakes the pollers. When it drops (the
 * database restarting), it is opened again as soon as the database answers; meanwhile polling
 * still delivers. An idle connection notices nothing of a partition or a failover, so it is asked
 * a `select 1` now and then: no answer in time counts as a drop.
 */
async function listenForCommits(
  options: Pick<WebhookDeliveryOptions, 'connectionString' | 'config'>,
  wake: () => void,
  log: Logger,
  state: { stopped: boolean },
) {
  let listener: pg.Client | null = null;
  const listenOnce = async () => {
    const client = new pg.Client({
      connectionString: options.connectionString,
      application_name: 'partner-api-webhooks-listen',
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      connectionTimeoutMillis: options.config.databaseConnectTimeoutMs,
      query_timeout: options.config.databaseQueryTimeoutMs + 1000,
    });
    client.on('notification', wake);
    client.on('error', (error) => {
      if (listener !== client) return;
      listener = null;
      client.end().catch(() => undefined);
      if (state.stopped) return;
      log.warn({ err: briefly(error) }, 'webhooks : écoute des notifications interrompue, reprise dès que la base répond');
      void listenAgain();
    });
    try {
      await client.connect();
      await client.query(`listen ${deliveryChannel}`);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    if (state.stopped) await client.end();
    else listener = client;
  };
  const listenAgain = async () => {
    for (let attempt = 0; !state.stopped && listener === null; attempt += 1) {
      try {
        await listenOnce();
        if (attempt > 0) log.info({ attempts: attempt + 1 }, 'webhooks : écoute des notifications rétablie');
      } catch (error) {
        if (attempt === 0) log.warn({ err: briefly(error) }, 'webhooks : écoute des notifications impossible pour l’instant');
        await new Promise((resolve) => setTimeout(resolve, relistenDelaysMs[Math.min(attempt, relistenDelaysMs.length - 1)]).unref());
      }
    }
  };
  await listenOnce();
  const heartbeat = setInterval(() => {
    const client = listener;
    client?.query(listenHeartbeatStatement).catch((error: Error) => client.emit('error', error));
  }, listenHeartbeatMs);
  heartbeat.unref();
  return {
    async close() {
      clearInterval(heartbeat);
      const closing = listener;
      listener = null;
      await closing?.end().catch(() => undefined);
    },
  };
}
