import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { generateWebhookSecret, signatureHeader } from '../src/webhooks/signature';
import { verifyWebhook, WebhookSignatureError } from '../src/webhooks/verify';
import { projectRoot } from './support/server-process';

const stripe = new Stripe('sk_test_unused');
const body = JSON.stringify({
  id: 'b7c1e3a5-9d2f-4b6e-8a1c-3e5f7a9b1d2c',
  type: 'ping',
  created_at: '2026-04-15T09:30:00.004+02:00',
  data: { learner: null, message: 'Ceci est un test — é' },
});
const now = () => Math.floor(Date.now() / 1000);

describe('verifyWebhook (for receivers)', () => {
  it('accepts a signature of ours and returns the event', () => {
    const secret = generateWebhookSecret();
    expect(verifyWebhook(body, signatureHeader([secret], now(), body), secret)).toEqual(JSON.parse(body));
    expect(verifyWebhook(Buffer.from(body), signatureHeader([secret], now(), body), secret).type).toBe('ping');
  });

  it('refuses a changed body, another secret, a stale or future timestamp, a malformed header', () => {
    const secret = generateWebhookSecret();
    const header = signatureHeader([secret], now(), body);
    const refusals: [Parameters<typeof verifyWebhook>, RegExp][] = [
      [[body.replace('test', 'Test'), header, secret], /no signature matches/],
      [[body, header, generateWebhookSecret()], /no signature matches/],
      [[body, signatureHeader([secret], now() - 301, body), secret], /tolerance/],
      [[body, signatureHeader([secret], now() + 301, body), secret], /tolerance/],
      [[body, undefined, secret], /missing/],
      [[body, header.replace(/^t=\d+,/, ''), secret], /malformed/],
      [[body, header.replace(/v1=/, 'v0='), secret], /malformed/],
      [[body, `${header.slice(0, -2)}zz`, secret], /malformed/],
    ];
    for (const [args, reason] of refusals) {
      expect(() => verifyWebhook(...args)).toThrow(WebhookSignatureError);
      expect(() => verifyWebhook(...args)).toThrow(reason);
    }
    // Within the tolerance, and with a tolerance of one's own.
    expect(verifyWebhook(body, signatureHeader([secret], now() - 290, body), secret).id).toBeDefined();
    expect(() => verifyWebhook(body, signatureHeader([secret], now() - 60, body), secret, { toleranceSeconds: 30 })).toThrow(/tolerance/);
  });

  it('accepts any of several v1 (a secret rotation)', () => {
    const [previous, current] = [generateWebhookSecret(), generateWebhookSecret()];
    const header = signatureHeader([current, previous], now(), body);
    expect(header.split(',')).toHaveLength(3);
    for (const secret of [previous, current]) expect(verifyWebhook(body, header, secret).type).toBe('ping');
  });

  it('agrees with Stripe’s implementation of the same scheme, both ways', () => {
    const secret = generateWebhookSecret();
    expect(stripe.webhooks.constructEvent(body, signatureHeader([secret], now(), body), secret).id).toBe(JSON.parse(body).id);
    const stripeHeader = stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: now() });
    expect(verifyWebhook(body, stripeHeader, secret).id).toBe(JSON.parse(body).id);
  });

  it('holds for any body and secret: a signature verifies, and any other byte breaks it', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 300 }),
        fc.string({ minLength: 1, maxLength: 60 }),
        fc.nat(),
        (text, secret, position) => {
          const raw = JSON.stringify({ text });
          const header = signatureHeader([secret], now(), raw);
          expect(() => verifyWebhook(raw, header, secret)).not.toThrow();
          const index = position % raw.length;
          const changed = raw.slice(0, index) + (raw[index] === 'x' ? 'y' : 'x') + raw.slice(index + 1);
          expect(() => verifyWebhook(changed, header, secret)).toThrow(WebhookSignatureError);
        },
      ),
    );
  });

  it('the README’s few lines of Node verify the same way', () => {
    const readme = readFileSync(`${projectRoot}/README.md`, 'utf8');
    const section = readme.slice(readme.indexOf('## Verify a webhook'));
    const code = /```js\n([\s\S]*?)```/.exec(section)![1]!.replace(/^import .*\n/m, '');
    const verifySignature = new Function('createHmac', 'timingSafeEqual', `${code}\nreturn verifySignature;`)(
      createHmac,
      timingSafeEqual,
    ) as (raw: string, header: string | undefined, secret: string) => boolean;
    const [previous, current] = [generateWebhookSecret(), generateWebhookSecret()];
    expect(verifySignature(body, signatureHeader([current, previous], now(), body), previous)).toBe(true);
    expect(verifySignature(body, signatureHeader([current], now(), body), current)).toBe(true);
    expect(verifySignature(`${body} `, signatureHeader([current], now(), body), current)).toBe(false);
    expect(verifySignature(body, signatureHeader([current], now() - 400, body), current)).toBe(false);
    expect(verifySignature(body, undefined, current)).toBe(false);
  });
});
