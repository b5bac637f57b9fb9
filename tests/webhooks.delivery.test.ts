import { sql } from 'kysely';
import Stripe from 'stripe';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint, findEndpoint, listDeliveriesPage } from '../db/webhook-endpoints';
import { recordEvent } from '../db/webhooks';
import { operatorActor } from '../scripts/command';
import type { Config } from '../src/config';
import {
  replayWebhookDelivery,
  resumeWebhookEndpoint,
  rotateWebhookEndpointSecret,
  sendWebhookPing,
  suspendWebhookEndpoint,
} from '../src/webhook-endpoints';
import { generateWebhookSecret } from '../src/webhooks/signature';
import { verifyWebhook } from '../src/webhooks/verify';
import { startWebhookDelivery, type WebhookDelivery } from '../src/webhooks/worker';
import { testConfig } from './support/app';
import { createOrgWithKeys } from './support/factories';
import { useTestDatabase } from './support/lifecycle';
import { eventually, startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver';

const database = useTestDatabase();
let orgId: string;
const running: { worker?: WebhookDelivery; receiver?: WebhookReceiver } = {};
const stripe = new Stripe('sk_test_unused');

beforeAll(async () => {
  orgId = (await createOrgWithKeys(database.db)).orgId;
});
afterEach(async () => {
  await running.worker?.stop();
  await running.receiver?.close();
  delete running.worker;
  delete running.receiver;
  // A test's endpoints go with it: else a later test's events fan out to them too, and a later
  // receiver given the same port by the system receives their deliveries (seen: 2 extra requests).
  await sql`delete from webhook_endpoints`.execute(database.db);
});

/** A worker on the test database, with a schedule in seconds. */
async function startWorker(overrides: Partial<Config> = {}) {
  running.worker = await startWebhookDelivery({
    connectionString: database.url,
    db: database.db,
    config: testConfig({ webhookAllowInsecure: true, webhookRetryDelaysSeconds: [1, 1, 1, 1, 1], webhookTimeoutMs: 2000, ...overrides }),
  });
  return running.worker;
}

async function startReceiver(reply?: WebhookReceiver['reply']) {
  running.receiver = await startWebhookReceiver(reply);
  return running.receiver;
}

async function newEndpoint(url: string, eventTypes = ['learner.enrolled', 'quiz.completed']) {
  const secret = generateWebhookSecret();
  const endpoint = await createEndpoint(database.db, { orgId, url, secret, eventTypes });
  return { ...endpoint, secret };
}

const learner = { user_id: '0f8c2d4e-6a1b-4c3d-8e9f-1a2b3c4d5e6f', email: 'claire.martin@exemple.fr', name: 'Claire Martin' };
const enrolled = (email = learner.email) => ({
  orgId,
  type: 'learner.enrolled' as const,
  data: { learner: { ...learner, email }, status: 'active' as const, programmes: [] },
});

async function deliveriesOf(endpointId: string) {
  return listDeliveriesPage(database.db, orgId, { endpointId }, null, 1000);
}

describe('a delivery', () => {
  it('is a signed JSON POST with the event, delivery and signature headers', async () => {
    await startWorker();
    const receiver = await startReceiver();
    const endpoint = await newEndpoint(receiver.url);
    const event = await recordEvent(database.db, enrolled());
    await receiver.waitFor((r) => r.length === 1);
    const [request] = receiver.received;

    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers['x-service-event']).toBe('learner.enrolled');
    const [delivery] = await eventually(
      () => deliveriesOf(endpoint.id),
      (d) => d[0]?.status === 'delivered',
    );
    expect(request!.headers['x-service-delivery']).toBe(delivery!.id);
    expect(request!.rawBody).toBe(event.body);
    const body = JSON.parse(request!.rawBody);
    expect(body).toEqual({
      id: event.id,
      type: 'learner.enrolled',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+0[12]:00$/),
      data: enrolled().data,
    });

    const header = String(request!.headers['x-service-signature']);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifyWebhook(request!.rawBody, header, endpoint.secret).id).toBe(event.id);
    expect(() => verifyWebhook(request!.rawBody, header, generateWebhookSecret())).toThrow(/no signature matches/);
    // An independent implementation of the same scheme agrees.
    expect(stripe.webhooks.constructEvent(request!.rawBody, header, endpoint.secret).id).toBe(event.id);

    expect(delivery!.attempts).toEqual([
      expect.objectContaining({ status_code: 200, succeeded: true, error: null, response_excerpt: 'ok' }),
    ]);
  });

  it('goes only to enabled endpoints of the organisation subscribed to the type', async () => {
    await startWorker();
    const receiver = await startReceiver();
    const subscribed = await newEndpoint(`${receiver.url}?a`, ['learner.enrolled']);
    const other = await newEndpoint(`${receiver.url}?b`, ['quiz.completed']);
    const disabled = await newEndpoint(`${receiver.url}?c`, ['learner.enrolled']);
    await suspendWebhookEndpoint(database.db, disabled.org_id, disabled.id, operatorActor);
    const otherOrg = await createOrgWithKeys(database.db, { name: 'Autre' });
    const foreign = await createEndpoint(database.db, {
      orgId: otherOrg.orgId,
      url: `${receiver.url}?d`,
      secret: generateWebhookSecret(),
      eventTypes: ['learner.enrolled'],
    });

    await recordEvent(database.db, enrolled('a@exemple.fr'));
    await receiver.waitFor((r) => r.length >= 1);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.received).toHaveLength(1);
    expect(await deliveriesOf(subscribed.id)).toHaveLength(1);
    for (const endpoint of [other, disabled, foreign]) expect(await deliveriesOf(endpoint.id)).toEqual([]);
  });
});

describe('retries', () => {
  it('follow the schedule with the same delivery id and the same bytes, until a 2xx', async () => {
    await startWorker({ webhookRetryDelaysSeconds: [1, 2, 1, 1, 1] });
    const receiver = await startReceiver((_request, index) => ({ status: index < 2 ? 503 : 204, body: index < 2 ? 'indisponible' : '' }));
    const endpoint = await newEndpoint(receiver.url);
    await recordEvent(database.db, enrolled());
    await receiver.waitFor((r) => r.length === 3);
    const [first, second, third] = receiver.received;
    expect(new Set(receiver.received.map((r) => r.deliveryId)).size).toBe(1);
    expect(new Set(receiver.received.map((r) => r.rawBody)).size).toBe(1);
    // Not before the planned delays (1 s, then 2 s).
    expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(1000);
    expect(third!.receivedAt - second!.receivedAt).toBeGreaterThanOrEqual(2000);

    const [delivery] = await eventually(
      () => deliveriesOf(endpoint.id),
      (d) => d[0]?.status === 'delivered',
    );
    expect(delivery!.attempt_count).toBe(3);
    expect(delivery!.attempts.map((a) => [a.status_code, a.succeeded, a.error, a.error_code])).toEqual([
      [503, false, 'réponse HTTP 503', 'http_status'],
      [503, false, 'réponse HTTP 503', 'http_status'],
      [204, true, null, null],
    ]);
    expect(delivery!.attempts[0]!.response_excerpt).toBe('indisponible');
    expect((await findEndpoint(database.db, orgId, endpoint.id))!.consecutive_failures).toBe(0);
  });

  it('stop after the 6th failure: the delivery is dead', async () => {
    await startWorker({ webhookRetryDelaysSeconds: [0.2, 0.2, 0.2, 0.2, 0.2] });
    const receiver = await startReceiver(() => ({ status: 500 }));
    const endpoint = await newEndpoint(receiver.url);
    await recordEvent(database.db, enrolled());
    const [delivery] = await eventually(
      () => deliveriesOf(endpoint.id),
      (d) => d[0]?.status === 'dead',
    );
    expect(delivery!.attempt_count).toBe(6);
    expect(delivery!.attempts).toHaveLength(6);
    expect(delivery!.dead_at).not.toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(receiver.received).toHaveLength(6);
  });

  it('count a reply slower than the timeout as a failure', async () => {
    await startWorker({ webhookTimeoutMs: 300, webhookRetryDelaysSeconds: [0.2, 0.2, 0.2, 0.2, 0.2] });
    const receiver = await startReceiver((_request, index) => ({ status: 200, delayMs: index === 0 ? 1500 : 0 }));
    const endpoint = await newEndpoint(receiver.url);
    await recordEvent(database.db, enrolled());
    const [delivery] = await eventually(
      () => deliveriesOf(endpoint.id),
      (d) => d[0]?.status === 'delivered',
    );
    expect(delivery!.attempts.map((a) => [a.status_code, a.succeeded])).toEqual([
      [null, false],
      [200, true],
    ]);
    expect(delivery!.attempts[0]).toMatchObject({ error: 'délai de réponse dépassé (300 ms)', error_code: 'timeout' });
    expect(delivery!.attempts[0]!.duration_ms).toBeLessThan(1500);
  });
});

describe('an endpoint', () => {
  it('is disabled by consecutive failures, keeps its pending deliveries, and resumes them when enabled again', async () => {
    await startWorker({ webhookDisableAfter: 3, webhookRetryDelaysSeconds: [0.2, 0.2, 0.2, 0.2, 0.2] });
    let healthy = false;
    const receiver = await startReceiver(() => ({ status: healthy ? 200 : 500 }));
    const endpoint = await newEndpoint(receiver.url);
    await recordEvent(database.db, enrolled('un@exemple.fr'));
    await recordEvent(database.db, enrolled('deux@exemple.fr'));

    const disabled = await eventually(
      () => findEndpoint(database.db, orgId, endpoint.id),
      (e) => e!.enabled === false,
    );
    expect(disabled).toMatchObject({ disabled_reason: 'failures', disabled_at: expect.any(Date) });
    // Attempts of one batch may land together: the count reaches the threshold, or passes it.
    expect(disabled!.consecutive_failures).toBeGreaterThanOrEqual(3);
    // Nothing more is attempted while it is disabled; the deliveries wait, pending.
    const attemptsWhenDisabled = receiver.received.length;
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(receiver.received).toHaveLength(attemptsWhenDisabled);
    expect((await deliveriesOf(endpoint.id)).map((d) => d.status)).toEqual(['pending', 'pending']);
    // An event while disabled gets no delivery for it.
    await recordEvent(database.db, enrolled('trois@exemple.fr'));
    expect(await deliveriesOf(endpoint.id)).toHaveLength(2);

    healthy = true;
    const enabled = await resumeWebhookEndpoint(database.db, endpoint.org_id, endpoint.id, operatorActor);
    expect(enabled).toMatchObject({ enabled: true, consecutive_failures: 0, disabled_reason: null, resumed_deliveries: 2 });
    const deliveries = await eventually(
      () => deliveriesOf(endpoint.id),
      (d) => d.every((x) => x.status === 'delivered'),
    );
    expect(deliveries.map((d) => d.attempts.at(-1)!.succeeded)).toEqual([true, true]);
  });

  it('gets its failure count reset by a success', async () => {
    await startWorker({ webhookDisableAfter: 3, webhookRetryDelaysSeconds: [0.2, 0.2, 0.2, 0.2, 0.2] });
    const receiver = await startReceiver((_request, index) => ({ status: index % 2 === 0 ? 500 : 200 }));
    const endpoint = await newEndpoint(receiver.url);
    // One event at a time: each fails once, then succeeds on its retry.
    for (const [i, email] of ['a@x.fr', 'b@x.fr', 'c@x.fr'].entries()) {
      await recordEvent(database.db, enrolled(email));
      await receiver.waitFor((r) => r.length === 2 * (i + 1));
    }
    await eventually(
      () => deliveriesOf(endpoint.id),
      (d) => d.length === 3 && d.every((x) => x.status === 'delivered'),
    );
    // Three failures in all, as many as the threshold, but never two in a row: still enabled.
    expect(await findEndpoint(database.db, orgId, endpoint.id)).toMatchObject({ enabled: true, consecutive_failures: 0 });
  });

  it('refuses, at delivery time, a name that now resolves to a forbidden address', async () => {
    // Created while loopback was allowed; the server now runs without that allowance.
    await startWorker({ webhookAllowInsecure: false, webhookRetryDelaysSeconds: [0.2, 0.2, 0.2, 0.2, 0.2] });
    const receiver = await startReceiver();
    const port = new URL(receiver.url).port;
    const byName = await newEndpoint(`https://localhost:${port}/hooks`);
    const byAddress = await newEndpoint(`https://127.0.0.1:${port}/hooks`);
    await recordEvent(database.db, enrolled());
    for (const endpoint of [byName, byAddress]) {
      const [delivery] = await eventually(
        () => deliveriesOf(endpoint.id),
        (d) => d[0]?.attempts.length === 1,
      );
      expect(delivery!.attempts[0]).toMatchObject({
        status_code: null,
        succeeded: false,
        error: expect.stringMatching(/^adresse refusée : .*loopback/),
        error_code: 'address_refused',
      });
    }
    expect(receiver.received).toEqual([]);
  });
});

describe('operator actions', () => {
  it('ping: a signed ping event to this endpoint only, visible in its delivery log', async () => {
    await startWorker();
    const receiver = await startReceiver();
    const endpoint = await newEndpoint(receiver.url);
    const other = await newEndpoint(`${receiver.url}?autre`);
    const ping = await sendWebhookPing(database.db, endpoint.org_id, endpoint.id, operatorActor);
    await receiver.waitFor((r) => r.length === 1);
    const request = receiver.received[0]!;
    expect(request.event).toBe('ping');
    expect(request.deliveryId).toBe(ping!.deliveryId);
    const body = verifyWebhook(request.rawBody, request.headers['x-service-signature'], endpoint.secret);
    expect(body).toMatchObject({
      id: ping!.eventId,
      type: 'ping',
      data: { learner: null, endpoint_id: endpoint.id, message: expect.any(String) },
    });
    await eventually(
      () => deliveriesOf(endpoint.id),
      (d) => d[0]?.status === 'delivered' && d[0].event_type === 'ping',
    );
    expect(await deliveriesOf(other.id)).toEqual([]);
  });

  it('replay: a delivered or dead delivery goes again with the same id and body', async () => {
    await startWorker({ webhookRetryDelaysSeconds: [0.1, 0.1, 0.1, 0.1, 0.1] });
    let status = 200;
    const receiver = await startReceiver(() => ({ status }));
    const endpoint = await newEndpoint(receiver.url);
    await recordEvent(database.db, enrolled());
    const [delivered] = await eventually(
      () => deliveriesOf(endpoint.id),
      (d) => d[0]?.status === 'delivered',
    );
    expect(await replayWebhookDelivery(database.db, orgId, delivered!.id, operatorActor)).toMatchObject({
      id: delivered!.id,
      replayed: true,
      status: 'pending',
    });
    await receiver.waitFor((r) => r.length === 2);
    expect(receiver.received[1]!.deliveryId).toBe(delivered!.id);
    expect(receiver.received[1]!.rawBody).toBe(receiver.received[0]!.rawBody);

    status = 500;
    await recordEvent(database.db, enrolled('autre@exemple.fr'));
    const dead = await eventually(
      () => deliveriesOf(endpoint.id),
      (d) => d.some((x) => x.status === 'dead'),
    );
    const deadOne = dead.find((d) => d.status === 'dead')!;
    status = 200;
    await replayWebhookDelivery(database.db, orgId, deadOne.id, operatorActor);
    const after = await eventually(
      () => deliveriesOf(endpoint.id),
      (d) => d.find((x) => x.id === deadOne.id)!.status === 'delivered',
    );
    const replayed = after.find((d) => d.id === deadOne.id)!;
    expect(replayed).toMatchObject({ attempt_count: 1, replay_count: 1, dead_at: null });
    expect(replayed.attempts).toHaveLength(7);
    // A pending delivery is not replayed (it is already on its way).
    await sql`update webhook_deliveries set status = 'pending', next_attempt_at = now() + interval '1 hour' where id = ${deadOne.id}`.execute(
      database.db,
    );
    expect(await replayWebhookDelivery(database.db, orgId, deadOne.id, operatorActor)).toMatchObject({
      replayed: false,
      status: 'pending',
    });
  });

  it('rotate-secret: both secrets sign for 24 hours, then only the new one', async () => {
    await startWorker();
    const receiver = await startReceiver();
    const endpoint = await newEndpoint(receiver.url);
    const { endpoint: rotated, secret: newSecret } = (await rotateWebhookEndpointSecret(
      database.db,
      endpoint.org_id,
      endpoint.id,
      operatorActor,
    ))!;
    expect(rotated.previous_secret_expires_at!.getTime() - Date.now()).toBeGreaterThan(23.9 * 3600 * 1000);
    await recordEvent(database.db, enrolled());
    await receiver.waitFor((r) => r.length === 1);
    const during = receiver.received[0]!;
    const header = String(during.headers['x-service-signature']);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    for (const secret of [endpoint.secret, newSecret]) {
      expect(verifyWebhook(during.rawBody, header, secret).type).toBe('learner.enrolled');
      expect(stripe.webhooks.constructEvent(during.rawBody, header, secret).type).toBe('learner.enrolled');
    }

    await sql`update webhook_endpoints set previous_secret_expires_at = now() - interval '1 second' where id = ${endpoint.id}`.execute(
      database.db,
    );
    await recordEvent(database.db, enrolled('apres@exemple.fr'));
    await receiver.waitFor((r) => r.length === 2);
    const after = receiver.received[1]!;
    expect(String(after.headers['x-service-signature'])).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifyWebhook(after.rawBody, after.headers['x-service-signature'], newSecret).type).toBe('learner.enrolled');
    expect(() => verifyWebhook(after.rawBody, after.headers['x-service-signature'], endpoint.secret)).toThrow();
  });
});
