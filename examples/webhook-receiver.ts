import { createServer, type Server } from 'node:http';
import { type VerifiedWebhookEvent, verifyWebhook, WebhookSignatureError } from '../src/webhooks/verify';

/**
 * A webhook receiver: reads the raw body, verifies `X-Service-Signature` (constant time, 300 s
 * tolerance), deduplicates on `X-Service-Delivery`, answers 2xx at once and hands the event on.
 *
 *   WEBHOOK_SECRET=whsec_… npx tsx examples/webhook-receiver.ts   # listens on :4000
 */
export function createWebhookReceiver(secret: string, onEvent: (event: VerifiedWebhookEvent, deliveryId: string) => void): Server {
  // A real receiver keeps this in its database, with a unique constraint.
  const seenDeliveries = new Set<string>();
  return createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const deliveryId = String(request.headers['x-service-delivery'] ?? '');
      let event: VerifiedWebhookEvent;
      try {
        event = verifyWebhook(Buffer.concat(chunks), request.headers['x-service-signature'], secret);
      } catch (error) {
        response.writeHead(error instanceof WebhookSignatureError ? 400 : 500).end();
        return;
      }
      response.writeHead(204).end();
      if (seenDeliveries.has(deliveryId)) return;
      seenDeliveries.add(deliveryId);
      onEvent(event, deliveryId);
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const secret = process.env.WEBHOOK_SECRET;
  if (!secret) {
    process.stderr.write('WEBHOOK_SECRET=whsec_… npx tsx examples/webhook-receiver.ts\n');
    process.exit(2);
  }
  createWebhookReceiver(secret, (event) => process.stdout.write(`${event.created_at} ${event.type} ${event.id}\n`)).listen(
    Number(process.env.PORT ?? 4000),
    '127.0.0.1',
  );
}
