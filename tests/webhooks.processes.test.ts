import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint } from '../db/webhook-endpoints';
import { deliveryQueue, type EventData, installDeliveryQueue, recordEvent } from '../db/webhooks';
import { generateWebhookSecret } from '../src/webhooks/signature';
import { createOrgWithKeys } from './support/factories';
import { useTestDatabase } from './support/lifecycle';
import { type ServerProcess, startServerProcess } from './support/server-process';
import { eventually, startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver';

const database = useTestDatabase();
let orgId: string;
const started: ServerProcess[] = [];
const receivers: WebhookReceiver[] = [];

// Real server processes (`npm start`'s entry point) with a schedule in seconds.
const serverEnvironment = {
  WEBHOOK_ALLOW_INSECURE: '1',
  WEBHOOK_RETRY_DELAYS: '0.5,0.5,0.5,0.5,0.5',
  WEBHOOK_TIMEOUT_MS: '1000',
  LOG_LEVEL: 'debug',
};

beforeAll(async () => {
  orgId = (await createOrgWithKeys(database.db)).orgId;
  await installDeliveryQueue(database.db);
});
afterAll(async () => {
  // Only those still running (a killed child has a signalCode and no exitCode).
  await Promise.all(
    started.filter((server) => server.child.exitCode === null && server.child.signalCode === null).map((server) => server.stop('SIGKILL')),
  );
  await Promise.all(receivers.map((receiver) => receiver.close()));
});

async function startServer() {
  const server = await startServerProcess(database.url, serverEnvironment);
  started.push(server);
  return server;
}

/** `count` events in transactions of 25, each with one delivery to the endpoint. */
async function recordEvents(count: number, prefix: string) {
  for (let start = 0; start < count; start += 25) {
    await database.db.transaction().execute(async (trx) => {
      for (let i = start; i < Math.min(count, start + 25); i += 1) {
        // An extra key (the contract lets data carry more) marks each event.
        const data = { learner: null, status: 'pending', programmes: [], n: `${prefix}-${i}` } as EventData<'learner.enrolled'>;
        await recordEvent(trx, { orgId, type: 'learner.enrolled', data });
      }
    });
  }
}

async function deliveryStates(endpointId: string) {
  return database.db.selectFrom('webhook_deliveries').select(['id', 'status']).where('endpoint_id', '=', endpointId).execute();
}

/** Attempts each server process reports in its (debug) log. */
function attemptsLogged(server: ServerProcess): number {
  return server
    .output()
    .split('\n')
    .filter((line) => line.includes('lot de tentatives'))
    .reduce((sum, line) => sum + (JSON.parse(line) as { webhookAttempts: number }).webhookAttempts, 0);
}

describe('delivery across server processes', () => {
  it('two processes deliver one stream, never sending one delivery twice at the same time', async () => {
    // Slow enough replies that both processes have deliveries in flight together; one in five fails.
    const receiver = await startWebhookReceiver((_request, index) => ({
      status: index % 5 === 0 ? 500 : 200,
      delayMs: 5 + (index % 7) * 5,
    }));
    receivers.push(receiver);
    const endpoint = await createEndpoint(database.db, {
      orgId,
      url: receiver.url,
      secret: generateWebhookSecret(),
      eventTypes: ['learner.enrolled'],
    });
    const [first, second] = await Promise.all([startServer(), startServer()]);

    await recordEvents(400, 'two');
    const deliveries = await eventually(
      () => deliveryStates(endpoint.id),
      (d) => d.length === 400 && d.every((x) => x.status === 'delivered'),
      60_000,
    );
    expect(receiver.overlaps).toEqual([]);
    // Each delivery reached the receiver, and succeeded exactly once.
    const successes = new Map<string, number>();
    receiver.received.forEach((request, index) => {
      if (index % 5 !== 0) successes.set(request.deliveryId, (successes.get(request.deliveryId) ?? 0) + 1);
    });
    expect(deliveries.filter((d) => successes.get(d.id) !== 1)).toEqual([]);
    // Both processes did part of the work.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const [byFirst, bySecond] = [attemptsLogged(first!), attemptsLogged(second!)];
    expect(byFirst).toBeGreaterThan(0);
    expect(bySecond).toBeGreaterThan(0);
    expect(byFirst + bySecond).toBe(receiver.received.length);
    await Promise.all([first!.stop(), second!.stop()]);
  }, 120_000);

  it('a server killed (kill -9) mid-stream loses nothing: after a restart every delivery completes', async () => {
    const receiver = await startWebhookReceiver(() => ({ status: 200, delayMs: 150 }));
    receivers.push(receiver);
    const endpoint = await createEndpoint(database.db, {
      orgId,
      url: receiver.url,
      secret: generateWebhookSecret(),
      eventTypes: ['learner.enrolled'],
    });
    const server = await startServer();
    // Killed while the events are still being recorded, with attempts in flight.
    const recording = recordEvents(300, 'kill');
    await receiver.waitFor((r) => r.length >= 60, 60_000);
    expect(await server.stop('SIGKILL')).toBeNull();
    await recording;
    const pendingAtKill = (await deliveryStates(endpoint.id)).filter((d) => d.status === 'pending').length;
    expect(pendingAtKill).toBeGreaterThan(0);
    const active = await sql<{ n: number }>`select count(*)::int as n from pgboss.job
      where name = ${deliveryQueue} and state = 'active'`.execute(database.db);
    // Some were in flight when the process died: pg-boss offers their jobs again once they expire.
    expect(active.rows[0]!.n).toBeGreaterThan(0);

    await startServer();
    const deliveries = await eventually(
      () => deliveryStates(endpoint.id),
      (d) => d.every((x) => x.status === 'delivered'),
      90_000,
    );
    expect(deliveries).toHaveLength(300);
    const received = new Set(receiver.received.map((r) => r.deliveryId));
    expect(deliveries.filter((d) => !received.has(d.id))).toEqual([]);
    expect(receiver.overlaps).toEqual([]);
  }, 150_000);
});
