import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { loadOpenapiDocument, webhookExampleData } from '../src/openapi-document';
import { verifyWebhook } from '../src/webhooks/verify';
import { startWebhookDelivery, type WebhookDelivery } from '../src/webhooks/worker';
import { bearer, testConfig } from './support/app';
import { createOrgWithKeys } from './support/factories';
import { useTestApp } from './support/lifecycle';
import { eventually, startWebhookReceiver, type WebhookReceiver, webhookBodyErrors } from './support/webhook-receiver';

// An organisation's webhook endpoints and delivery log through the management API, called by the
// platform's backend with its token: each change through the server, the deliveries it causes
// received by a real receiver from a real worker, and nothing of another organisation reachable.

const managementToken = 'jeton-de-gestion-de-la-plateforme-0123456789abcdef';
const fixture = useTestApp({ managementToken, rateLimitPerMinute: 1000, webhookAllowInsecure: true });
const running: { worker?: WebhookDelivery; receivers: WebhookReceiver[] } = { receivers: [] };

afterEach(async () => {
  await running.worker?.stop();
  for (const receiver of running.receivers) await receiver.close();
  delete running.worker;
  running.receivers = [];
  await sql`delete from webhook_endpoints`.execute(fixture.db);
});

async function startWorker(retryDelaysSeconds = [0.2, 0.2, 0.2, 0.2, 0.2], disableAfter = 100) {
  running.worker = await startWebhookDelivery({
    connectionString: fixture.url,
    db: fixture.db,
    config: testConfig({
      webhookAllowInsecure: true,
      webhookRetryDelaysSeconds: retryDelaysSeconds,
      webhookTimeoutMs: 2000,
      webhookDisableAfter: disableAfter,
    }),
  });
}

async function startReceiver(reply?: WebhookReceiver['reply']) {
  const receiver = await startWebhookReceiver(reply);
  running.receivers.push(receiver);
  return receiver;
}

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

async function call(method: Method, url: string, body?: unknown) {
  const response = await fixture.app.inject({
    method,
    url: `/manage/v1${url}`,
    headers: bearer(managementToken),
    ...(body === undefined ? {} : { payload: body as object }),
  });
  return {
    status: response.statusCode,
    headers: response.headers,
    body: (response.body === '' ? null : response.json()) as Record<string, any>,
  };
}

async function newEndpoint(orgId: string, url: string, eventTypes?: string[]) {
  const created = await call('POST', `/organisations/${orgId}/webhook-endpoints`, {
    url,
    ...(eventTypes ? { event_types: eventTypes } : {}),
  });
  expect(created.status).toBe(201);
  return created.body as { endpoint: Record<string, any>; secret: string };
}

async function deliveriesOf(orgId: string, query = '') {
  const listed = await call('GET', `/organisations/${orgId}/webhook-deliveries${query}`);
  expect(listed.status).toBe(200);
  return listed.body.data as Record<string, any>[];
}

async function auditActions(orgId: string) {
  const rows = await fixture.db
    .selectFrom('audit_events')
    .select(['action', 'target_id', 'details'])
    .where('org_id', '=', orgId)
    .orderBy('id')
    .execute();
  return rows;
}

describe('an endpoint', () => {
  it('is created with its secret shown once, listed without it, and its test ping arrives signed and is logged', async () => {
    await startWorker();
    const receiver = await startReceiver();
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Ping' });
    const { endpoint, secret } = await newEndpoint(orgId, receiver.url, ['learner.enrolled']);
    expect(secret).toMatch(/^whsec_/);
    expect(endpoint).toMatchObject({ url: receiver.url, event_types: ['learner.enrolled'], state: 'active', consecutive_failures: 0 });

    const listed = await call('GET', `/organisations/${orgId}/webhook-endpoints`);
    expect(listed.body).toMatchObject({ data: [endpoint], has_more: false, next_cursor: null });
    expect(JSON.stringify(listed.body)).not.toContain(secret);

    const test = await call('POST', `/organisations/${orgId}/webhook-endpoints/${endpoint.id}/test`);
    expect(test.status).toBe(202);
    expect(test.body).toMatchObject({ endpoint_id: endpoint.id, event_type: 'ping', status: 'pending', attempts: [], attempt_total: 0 });
    await receiver.waitFor((received) => received.length === 1);
    const ping = receiver.received[0]!;
    expect(ping.deliveryId).toBe(test.body.id);
    expect(verifyWebhook(ping.rawBody, ping.headers['x-service-signature'], secret)).toMatchObject({
      type: 'ping',
      data: { learner: null, endpoint_id: endpoint.id },
    });

    const [logged] = await eventually(
      () => deliveriesOf(orgId),
      (data) => data[0]?.status === 'delivered',
    );
    expect(logged).toMatchObject({ id: test.body.id, event_type: 'ping', attempt_total: 1, next_attempt_at: null });
    expect(logged!.attempts).toEqual([
      expect.objectContaining({ status_code: 200, succeeded: true, error: null, duration_ms: expect.any(Number) }),
    ]);
    const audit = await auditActions(orgId);
    expect(audit.map((row) => row.action)).toEqual(['createWebhookEndpoint', 'sendWebhookTest']);
    expect(JSON.stringify(audit)).not.toContain(secret);
  });

  it('receives the contract’s example of a type it does not subscribe to, alone, with a fresh id and date', async () => {
    await startWorker();
    const receiver = await startReceiver();
    const bystander = await startReceiver();
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Exemple' });
    const { endpoint, secret } = await newEndpoint(orgId, receiver.url, ['learner.enrolled']);
    await newEndpoint(orgId, bystander.url, ['programme.completed']);

    const sent = await call('POST', `/organisations/${orgId}/webhook-endpoints/${endpoint.id}/example`, {
      event_type: 'programme.completed',
    });
    expect(sent).toMatchObject({ status: 202, body: { event_type: 'programme.completed', endpoint_id: endpoint.id } });
    await receiver.waitFor((received) => received.length === 1);
    const body = verifyWebhook(receiver.received[0]!.rawBody, receiver.received[0]!.headers['x-service-signature'], secret) as any;
    const example = loadOpenapiDocument().components.schemas.ProgrammeCompletedEvent.examples[0];
    expect(body.type).toBe('programme.completed');
    expect(body.data).toEqual(webhookExampleData(loadOpenapiDocument(), 'programme.completed'));
    expect(body.id).not.toBe(example.id);
    expect(Date.now() - Date.parse(body.created_at)).toBeLessThan(60_000);
    expect(webhookBodyErrors(body)).toEqual([]);
    // The endpoint that subscribes to the type receives nothing of an example meant for another.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(bystander.received).toEqual([]);

    const unknownType = await call('POST', `/organisations/${orgId}/webhook-endpoints/${endpoint.id}/example`, { event_type: 'ping' });
    expect(unknownType).toMatchObject({ status: 400, body: { code: 'invalid_body', param: 'event_type' } });
  });

  it('changes its address and types; a private or plain-http address is refused with its reason, and nothing changes', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Modification' });
    const { endpoint } = await newEndpoint(orgId, 'https://93.184.216.34/webhooks', ['learner.enrolled']);
    const changed = await call('PATCH', `/organisations/${orgId}/webhook-endpoints/${endpoint.id}`, {
      url: 'https://93.184.216.35/recepteur',
      event_types: ['quiz.completed', 'programme.completed'],
    });
    expect(changed).toMatchObject({
      status: 200,
      body: { id: endpoint.id, url: 'https://93.184.216.35/recepteur', event_types: ['quiz.completed', 'programme.completed'] },
    });

    // Addresses are checked as at creation, even with loopback allowed for the tests' receivers.
    for (const url of ['https://10.0.0.8/webhooks', 'https://169.254.169.254/latest', 'https://user:secret@93.184.216.34/']) {
      const refused = await call('PATCH', `/organisations/${orgId}/webhook-endpoints/${endpoint.id}`, { url });
      expect(refused).toMatchObject({ status: 400, body: { code: 'webhook_url_refused', param: 'url' } });
      expect(refused.body.error).toMatch(/^Adresse refusée : .+\.$/);
    }
    const empty = await call('PATCH', `/organisations/${orgId}/webhook-endpoints/${endpoint.id}`, {});
    expect(empty).toMatchObject({ status: 400, body: { code: 'invalid_body' } });
    const noTypes = await call('PATCH', `/organisations/${orgId}/webhook-endpoints/${endpoint.id}`, { event_types: [] });
    expect(noTypes).toMatchObject({ status: 400, body: { code: 'invalid_body', param: 'event_types' } });
    const [kept] = (await call('GET', `/organisations/${orgId}/webhook-endpoints`)).body.data;
    expect(kept).toMatchObject({ url: 'https://93.184.216.35/recepteur', event_types: ['quiz.completed', 'programme.completed'] });
  });

  it('is out of reach of another organisation: every operation on it answers 404 there', async () => {
    const owner = await createOrgWithKeys(fixture.db, { name: 'Formations Propriétaire' });
    const other = await createOrgWithKeys(fixture.db, { name: 'Formations Voisine' });
    const { endpoint } = await newEndpoint(owner.orgId, 'https://93.184.216.34/webhooks');
    const base = `/organisations/${other.orgId}/webhook-endpoints/${endpoint.id}`;
    const attempts: [Method, string, unknown?][] = [
      ['PATCH', base, { event_types: ['quiz.completed'] }],
      ['DELETE', base],
      ['POST', `${base}/enable`],
      ['POST', `${base}/rotate-secret`],
      ['POST', `${base}/test`],
      ['POST', `${base}/example`, { event_type: 'quiz.completed' }],
      ['POST', `${base}/recover`, { since: new Date(Date.now() - 86_400_000).toISOString() }],
    ];
    for (const [method, url, body] of attempts) {
      const answer = await call(method, url, body);
      expect(answer, `${method} ${url}`).toMatchObject({ status: 404, body: { code: 'unknown_webhook_endpoint' } });
    }
    const log = await call('GET', `/organisations/${other.orgId}/webhook-deliveries?endpoint_id=${endpoint.id}`);
    expect(log).toMatchObject({ status: 404, body: { code: 'unknown_webhook_endpoint' } });
    expect((await call('GET', `/organisations/${other.orgId}/webhook-endpoints`)).body.data).toEqual([]);
    const [untouched] = (await call('GET', `/organisations/${owner.orgId}/webhook-endpoints`)).body.data;
    expect(untouched).toEqual(endpoint);
    expect(await auditActions(other.orgId)).toEqual([]);
  });

  it('is one of at most 20: 25 creations at once make exactly 20, the others get 409', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Vingt' });
    const answers = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        call('POST', `/organisations/${orgId}/webhook-endpoints`, { url: `https://93.184.216.34/r${i}` }),
      ),
    );
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(20);
    const refused = answers.filter((answer) => answer.status !== 201);
    expect(refused).toHaveLength(5);
    for (const answer of refused) expect(answer).toMatchObject({ status: 409, body: { code: 'endpoint_limit_reached' } });
    const count = await fixture.db
      .selectFrom('webhook_endpoints')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('org_id', '=', orgId)
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(20);

    // Pages of 8 by cursor give the 20, newest first, each once.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof call>> = await call(
        'GET',
        `/organisations/${orgId}/webhook-endpoints?limit=8${cursor ? `&cursor=${cursor}` : ''}`,
      );
      seen.push(...page.body.data.map((endpoint: { id: string }) => endpoint.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(new Set(seen).size).toBe(20);
  });

  it('is deleted with its delivery log; the audit log keeps its address', async () => {
    await startWorker();
    const receiver = await startReceiver();
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Suppression' });
    const { endpoint } = await newEndpoint(orgId, receiver.url);
    await call('POST', `/organisations/${orgId}/webhook-endpoints/${endpoint.id}/test`);
    await eventually(
      () => deliveriesOf(orgId),
      (data) => data[0]?.status === 'delivered',
    );
    const deleted = await call('DELETE', `/organisations/${orgId}/webhook-endpoints/${endpoint.id}`);
    expect(deleted).toMatchObject({ status: 204, body: null });
    expect(await deliveriesOf(orgId)).toEqual([]);
    expect(await call('DELETE', `/organisations/${orgId}/webhook-endpoints/${endpoint.id}`)).toMatchObject({
      status: 404,
      body: { code: 'unknown_webhook_endpoint' },
    });
    const audit = await auditActions(orgId);
    expect(audit.at(-1)).toMatchObject({ action: 'deleteWebhookEndpoint', target_id: endpoint.id, details: { url: receiver.url } });
  });
});

describe('the secret', () => {
  it('is rotated: the new one is shown once, and both sign for 24 hours', async () => {
    await startWorker();
    const receiver = await startReceiver();
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Secret' });
    const { endpoint, secret: first } = await newEndpoint(orgId, receiver.url);
    const rotated = await call('POST', `/organisations/${orgId}/webhook-endpoints/${endpoint.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(first);
    expect(Date.parse(rotated.body.endpoint.previous_secret_expires_at) - Date.now()).toBeGreaterThan(23.9 * 3600 * 1000);
    await call('POST', `/organisations/${orgId}/webhook-endpoints/${endpoint.id}/test`);
    await receiver.waitFor((received) => received.length === 1);
    const { rawBody, headers } = receiver.received[0]!;
    for (const secret of [first, rotated.body.secret])
      expect(verifyWebhook(rawBody, headers['x-service-signature'], secret).type).toBe('ping');
    const listed = await call('GET', `/organisations/${orgId}/webhook-endpoints`);
    expect(JSON.stringify(listed.body)).not.toContain(rotated.body.secret);
  });
});

describe('the delivery log', () => {
  it('replays a dead delivery, refuses a pending one, and recovers every dead one since a date once the endpoint is enabled again', async () => {
    let status = 500;
    const receiver = await startReceiver(() => ({ status }));
    await startWorker([0.1, 0.1], 3);
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Panne' });
    const { endpoint } = await newEndpoint(orgId, receiver.url);
    const base = `/organisations/${orgId}/webhook-endpoints/${endpoint.id}`;
    // Three failures in a row disable the endpoint; its first delivery is dead after its 3 attempts.
    const first = await call('POST', `${base}/test`);
    const [dead] = await eventually(
      () => deliveriesOf(orgId),
      (data) => data[0]?.status === 'dead',
    );
    expect(dead).toMatchObject({ id: first.body.id, attempt_total: 3, next_attempt_at: null });
    expect(dead!.attempts.map((attempt: { status_code: number }) => attempt.status_code)).toEqual([500, 500, 500]);
    const disabled = (await call('GET', `/organisations/${orgId}/webhook-endpoints`)).body.data[0];
    expect(disabled).toMatchObject({ state: 'disabled', disabled_reason: 'failures', consecutive_failures: 3 });

    // Disabled: a recovery is refused; a ping waits, set aside, for the endpoint, with no attempt planned.
    expect(await call('POST', `${base}/recover`, { since: new Date(Date.now() - 86_400_000).toISOString() })).toMatchObject({
      status: 409,
      body: { code: 'endpoint_disabled' },
    });
    const waiting = await call('POST', `${base}/test`);
    expect(waiting.body).toMatchObject({ status: 'pending', next_attempt_at: null });
    await eventually(
      () => deliveriesOf(orgId, `?status=pending`),
      (data) => data[0]?.id === waiting.body.id && data[0].next_attempt_at === null,
    );
    expect(await call('POST', `/organisations/${orgId}/webhook-deliveries/${waiting.body.id}/replay`)).toMatchObject({
      status: 409,
      body: { code: 'delivery_pending' },
    });

    // A recovery reaches 30 days back at most.
    expect(await call('POST', `${base}/recover`, { since: new Date(Date.now() - 31 * 86_400_000).toISOString() })).toMatchObject({
      status: 400,
      body: { code: 'invalid_body', param: 'since' },
    });
    status = 200;
    const enabled = await call('POST', `${base}/enable`);
    expect(enabled).toMatchObject({ status: 200, body: { endpoint: { state: 'active', consecutive_failures: 0 }, resumed_deliveries: 1 } });
    const recovered = await call('POST', `${base}/recover`, { since: new Date(Date.now() - 3_600_000).toISOString() });
    expect(recovered).toMatchObject({ status: 202, body: { requeued: 1 } });
    const delivered = await eventually(
      () => deliveriesOf(orgId),
      (data) => data.length === 2 && data.every((delivery) => delivery.status === 'delivered'),
    );
    const again = delivered.find((delivery) => delivery.id === first.body.id)!;
    expect(again).toMatchObject({ replay_count: 1, attempt_total: 4, dead_at: null });

    // A delivered delivery is replayed once more: the same id and the same body.
    const replayed = await call('POST', `/organisations/${orgId}/webhook-deliveries/${first.body.id}/replay`);
    expect(replayed).toMatchObject({ status: 202, body: { id: first.body.id, status: 'pending', replay_count: 2 } });
    await receiver.waitFor((received) => received.filter((r) => r.deliveryId === first.body.id).length === 5);
    const bodies = new Set(receiver.received.filter((r) => r.deliveryId === first.body.id).map((r) => r.rawBody));
    expect(bodies.size).toBe(1);
    expect((await auditActions(orgId)).map((row) => row.action)).toEqual([
      'createWebhookEndpoint',
      'sendWebhookTest',
      'sendWebhookTest',
      'enableWebhookEndpoint',
      'recoverWebhookDeliveries',
      'replayWebhookDelivery',
    ]);
  });

  it('filters by endpoint, status, type and time, pages by cursor, and refuses an empty time window', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Journal' });
    const one = (await newEndpoint(orgId, 'https://93.184.216.34/un')).endpoint;
    const two = (await newEndpoint(orgId, 'https://93.184.216.34/deux')).endpoint;
    // No worker: every delivery stays pending, in the order of the calls.
    const sent: { id: string; endpoint: string; type: string }[] = [];
    for (const [endpoint, type] of [
      [one, 'quiz.completed'],
      [two, 'programme.completed'],
      [one, 'programme.completed'],
      [two, 'quiz.completed'],
      [one, 'learner.enrolled'],
      [two, 'programme.completed'],
      [one, 'quiz.completed'],
    ] as const) {
      const answer = await call('POST', `/organisations/${orgId}/webhook-endpoints/${endpoint.id}/example`, { event_type: type });
      sent.push({ id: answer.body.id, endpoint: endpoint.id, type });
    }
    const newestFirst = [...sent].reverse();
    expect((await deliveriesOf(orgId)).map((d) => d.id)).toEqual(newestFirst.map((d) => d.id));
    expect((await deliveriesOf(orgId, `?endpoint_id=${two.id}`)).map((d) => d.id)).toEqual(
      newestFirst.filter((d) => d.endpoint === two.id).map((d) => d.id),
    );
    expect((await deliveriesOf(orgId, '?event_type=programme.completed')).map((d) => d.id)).toEqual(
      newestFirst.filter((d) => d.type === 'programme.completed').map((d) => d.id),
    );
    expect(await deliveriesOf(orgId, '?status=delivered')).toEqual([]);
    await sql`update webhook_deliveries set created_at = created_at - interval '2 days' where id = any(${sent.slice(0, 3).map((d) => d.id)}::uuid[])`.execute(
      fixture.db,
    );
    const yesterday = new Date(Date.now() - 86_400_000).toISOString();
    expect((await deliveriesOf(orgId, `?since=${yesterday}`)).map((d) => d.id)).toEqual(newestFirst.slice(0, 4).map((d) => d.id));
    expect((await deliveriesOf(orgId, `?until=${yesterday}`)).map((d) => d.id)).toEqual(newestFirst.slice(4).map((d) => d.id));
    const empty = await call('GET', `/organisations/${orgId}/webhook-deliveries?since=${yesterday}&until=${yesterday}`);
    expect(empty).toMatchObject({ status: 400, body: { code: 'invalid_parameter', param: 'until' } });

    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof call>> = await call(
        'GET',
        `/organisations/${orgId}/webhook-deliveries?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
      );
      pages.push(page.body.data.map((delivery: { id: string }) => delivery.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(pages.map((page) => page.length)).toEqual([3, 3, 1]);
    expect(pages.flat()).toEqual(newestFirst.map((d) => d.id));
  });
});
