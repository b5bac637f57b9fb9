import type { AddressInfo, Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPartnerClient } from '../examples/client';
import { createWebhookReceiver } from '../examples/webhook-receiver';
import { computeSignature } from '../src/webhooks/signature';
import type { VerifiedWebhookEvent } from '../src/webhooks/verify';
import { admin } from './support/admin';
import { addLicences, createOrgWithKeys } from './support/factories';
import { useTestDatabase } from './support/lifecycle';
import { type ServerProcess, startServerProcess } from './support/server-process';
import { eventually } from './support/webhook-receiver';

const insecure = { WEBHOOK_ALLOW_INSECURE: '1' };
const database = useTestDatabase();
let server: ServerProcess;
let receiver: Server;
let receiverUrl: string;
const received: { event: VerifiedWebhookEvent; deliveryId: string }[] = [];
let secret: string;
let org: Awaited<ReturnType<typeof createOrgWithKeys>>;

beforeAll(async () => {
  org = await createOrgWithKeys(database.db);
  await addLicences(database.db, org.orgId, 'standard', 5);
  server = await startServerProcess(database.url, insecure);
}, 60_000);
afterAll(async () => {
  receiver?.close();
  await server?.stop();
});

describe('the example webhook receiver, against the real server', () => {
  it('receives a signed learner.enrolled after POST /users, verifies it, and refuses forgeries and duplicates', async () => {
    // Listen first, then register the address with the operator command, which gives the secret.
    const placeholder = createWebhookReceiver('whsec_placeholder', () => undefined);
    await new Promise<void>((resolve) => placeholder.listen(0, '127.0.0.1', resolve));
    const port = (placeholder.address() as AddressInfo).port;
    placeholder.close();
    receiverUrl = `http://127.0.0.1:${port}/hooks`;
    const endpoint = await admin(
      database.url,
      ['webhook', 'create', '--org', org.orgId, '--url', receiverUrl, '--events', 'learner.enrolled'],
      insecure,
    );
    secret = endpoint.secret;
    expect(secret).toMatch(/^whsec_/);
    receiver = createWebhookReceiver(secret, (event, deliveryId) => received.push({ event, deliveryId }));
    await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));

    const client = createPartnerClient(server.baseUrl, org.writeKey);
    const { response } = await client.POST('/users', { body: { email: 'nina.leroy@exemple.fr' } });
    expect(response.status).toBe(201);

    await eventually(
      async () => received.length,
      (count) => count === 1,
      10_000,
    );
    const [{ event, deliveryId }] = received as [(typeof received)[number]];
    expect(event.type).toBe('learner.enrolled');
    expect((event.data.learner as { email: string }).email).toBe('nina.leroy@exemple.fr');
    expect(deliveryId).toMatch(/^[0-9a-f-]{36}$/);

    // A forged body (valid header shape, wrong signature) is refused; a replayed delivery is ignored.
    const body = JSON.stringify(event);
    const now = Math.floor(Date.now() / 1000);
    const forged = await fetch(receiverUrl, {
      method: 'POST',
      body: body.replace('nina', 'mallory'),
      headers: {
        'x-service-signature': `t=${now},v1=${computeSignature(secret, now, body)}`,
        'x-service-delivery': 'forged',
      },
    });
    expect(forged.status).toBe(400);
    const replayed = await fetch(receiverUrl, {
      method: 'POST',
      body,
      headers: {
        'x-service-signature': `t=${now},v1=${computeSignature(secret, now, body)}`,
        'x-service-delivery': deliveryId,
      },
    });
    expect(replayed.status).toBe(204);
    expect(received).toHaveLength(1);
  }, 60_000);
});
