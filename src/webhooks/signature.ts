import { createHmac, randomBytes } from 'node:crypto';

/** A new endpoint secret: `whsec_` and 32 random bytes. Shown once; the server keeps it to sign. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/** Hex HMAC-SHA256, keyed with the whole secret string, of `<t>.<raw body>`. */
export function computeSignature(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

/**
 * `X-Service-Signature`: `t=<unix seconds>,v1=<hex>`, with one `v1=` per valid secret (the current
 * one first, then the previous one during the 24 hours after a rotation), as Stripe does.
 */
export function signatureHeader(secrets: readonly string[], timestamp: number, body: string): string {
  return [`t=${timestamp}`, ...secrets.map((secret) => `v1=${computeSignature(secret, timestamp, body)}`)].join(',');
}
