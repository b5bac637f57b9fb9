import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';

/** One request as a webhook receiver saw it. */
export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  rawBody: string;
  receivedAt: number;
  deliveryId: string;
  event: string;
}

export interface Reply {
  status?: number;
  /** Answer after this long (a reply slower than the timeout tests the timeout). */
  delayMs?: number;
  body?: string;
}

export interface WebhookReceiver {
  url: string;
  received: ReceivedWebhook[];
  /** Sends of one delivery that overlapped in time (must stay 0). */
  overlaps: string[];
  reply: (request: ReceivedWebhook, index: number) => Reply;
  waitFor(predicate: (received: ReceivedWebhook[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** A real HTTP receiver on 127.0.0.1 (ephemeral port) that records every request. */
export async function startWebhookReceiver(reply: WebhookReceiver['reply'] = () => ({ status: 200 })): Promise<WebhookReceiver> {
  const inFlight = new Map<string, number>();
  const receiver = { received: [] as ReceivedWebhook[], overlaps: [] as string[], reply } as WebhookReceiver;
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const deliveryId = String(request.headers['x-service-delivery']);
      const entry: ReceivedWebhook = {
        headers: request.headers,
        rawBody: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
        deliveryId,
        event: String(request.headers['x-service-event']),
      };
      const index = receiver.received.push(entry) - 1;
      const now = (inFlight.get(deliveryId) ?? 0) + 1;
      inFlight.set(deliveryId, now);
      if (now > 1) receiver.overlaps.push(deliveryId);
      const answer = receiver.reply(entry, index);
      const finish = () => {
        inFlight.set(deliveryId, (inFlight.get(deliveryId) ?? 1) - 1);
        if (response.destroyed) return;
        response.writeHead(answer.status ?? 200, { 'Content-Type': 'text/plain' }).end(answer.body ?? 'ok');
      };
      if (answer.delayMs) setTimeout(finish, answer.delayMs);
      else finish();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  receiver.url = `http://127.0.0.1:${port}/hooks`;
  receiver.waitFor = async (predicate, timeoutMs = 20_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(receiver.received)) {
      if (Date.now() > deadline) throw new Error(`délai dépassé : ${receiver.received.length} requêtes reçues`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  receiver.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

/** Polls until a condition on the database holds. */
export async function eventually<T>(read: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (accept(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition non atteinte : ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export { webhookBodyErrors } from './openapi-validator';
