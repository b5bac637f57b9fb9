import { CompiledQuery, sql } from 'kysely';
import PgBoss from 'pg-boss';
import type { DB } from '../database';

/**
 * The pg-boss side of deliveries. A job carries only a delivery id and says "look at this delivery
 * at this time": the `webhook_deliveries` row says what to send and whether it is still due, and
 * its lease says who may send it. So a duplicate or late job is harmless, and a missing one is
 * recreated by the worker's sweep.
 */
export const deliveryQueue = 'webhook-delivery';
/** NOTIFY channel: committed deliveries wake the workers of every server process at once. */
export const deliveryChannel = 'webhook_deliveries';

export interface DeliveryJob {
  deliveryId: string;
}

/** pg-boss's `db` option over Kysely: its SQL runs on our connection or inside our transaction. */
export function kyselyExecutor(db: DB): PgBoss.Db {
  return {
    async executeSql(text: string, values: unknown[] = []) {
      const result = await db.executeQuery(CompiledQuery.raw(text, values));
      return { rows: result.rows as unknown[] };
    },
  };
}

/**
 * The queue: policy `short` allows one waiting job per delivery (the singleton key), so every
 * writer can ask for a delivery to be looked at without piling up duplicates.
 */
export const deliveryQueueOptions = {
  policy: 'short',
  retryLimit: 2,
  retryDelay: 5,
  expireInSeconds: 15 * 60,
  retentionMinutes: 14 * 24 * 60,
} as const satisfies Omit<PgBoss.Queue, 'name'>;

/** Installs (or upgrades) pg-boss's schema and creates the queue; idempotent. */
export async function installDeliveryQueue(db: DB): Promise<void> {
  const boss = new PgBoss({ db: kyselyExecutor(db), supervise: false, schedule: false, migrate: true });
  await boss.start();
  try {
    await boss.createQueue(deliveryQueue, { name: deliveryQueue, ...deliveryQueueOptions });
  } finally {
    await boss.stop({ graceful: false, wait: true });
  }
}

// Only its `insert` is used, always with the caller's transaction as `db`: it is never started.
let jobWriter: PgBoss | null = null;

/**
 * Queues the jobs of these deliveries inside the caller's transaction (they exist if and only if
 * the transaction commits); those due now wake the workers up at commit, unless the caller has
 * already asked for that (`wake: false`).
 */
export async function queueDeliveryJobs(
  trx: DB,
  deliveries: { id: string; startAfterSeconds?: number }[],
  options: { wake?: boolean } = {},
): Promise<void> {
  if (deliveries.length === 0) return;
  jobWriter ??= new PgBoss({ db: { executeSql: () => Promise.reject(new Error('unused')) }, supervise: false, schedule: false });
  await jobWriter.insert(deliveries.map((delivery) => ({
    name: deliveryQueue,
    data: { deliveryId: delivery.id } satisfies DeliveryJob,
    singletonKey: delivery.id,
    ...(delivery.startAfterSeconds ? { startAfter: String(delivery.startAfterSeconds) } : {}),
  })), { db: kyselyExecutor(trx) });
  if (options.wake !== false && deliveries.some((delivery) => !delivery.startAfterSeconds)) await sql`select pg_notify(${deliveryChannel}, '')`.execute(trx);
}
