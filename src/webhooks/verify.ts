import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * For receivers: checks a delivery's `X-Service-Signature` against the endpoint secret and returns
 * the parsed event. Self-contained (node:crypto only) so that a receiver can copy this file as is.
 *
 * - the signature is the hex HMAC-SHA256 of `<t>.<raw body>`, keyed with the whole `whsec_` secret;
 *   the header may carry several `v1=` (during a secret rotation): one match is enough;
 * - comparison in constant time;
 * - a `t` more than `toleranceSeconds` (300) away from now is refused, which bounds replays;
 * - pass the RAW body (the bytes received), not a re-serialised object.
 * Deduplicate on the `X-Service-Delivery` header: a delivery may arrive more than once.
 */
export interface VerifiedWebhookEvent {
  id: string;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
}

export class WebhookSignatureError extends Error {
  override name = 'WebhookSignatureError';
}

export const defaultToleranceSeconds = 300;

export function verifyWebhook(
  rawBody: string | Buffer,
  signatureHeader: string | string[] | undefined,
  secret: string,
  options: { toleranceSeconds?: number; nowSeconds?: number } = {},
): VerifiedWebhookEvent {
  if (typeof signatureHeader !== 'string' || signatureHeader === '') throw new WebhookSignatureError('missing signature header');
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const part of signatureHeader.split(',')) {
    const separator = part.indexOf('=');
    const key = part.slice(0, separator).trim();
    const value = part.slice(separator + 1).trim();
    if (key === 't' && /^\d+$/.test(value)) timestamp = Number(value);
    else if (key === 'v1' && /^[0-9a-f]{64}$/.test(value)) signatures.push(value);
  }
  if (timestamp === null || signatures.length === 0) throw new WebhookSignatureError('malformed signature header');

  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > (options.toleranceSeconds ?? defaultToleranceSeconds)) {
    throw new WebhookSignatureError('timestamp outside the tolerance');
  }
  const body = typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8');
  const expected = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest();
  // Every candidate is compared (no early exit), each in constant time.
  let matched = false;
  for (const signature of signatures) {
    if (timingSafeEqual(expected, Buffer.from(signature, 'hex'))) matched = true;
  }
  if (!matched) throw new WebhookSignatureError('no signature matches');
  return JSON.parse(body) as VerifiedWebhookEvent;
}
