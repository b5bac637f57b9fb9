import { describe, expect, it } from 'vitest';
import {
  checkWebhookUrl,
  checkWebhookUrlForm,
  forbiddenAddressReason,
  guardedLookup,
  WebhookAddressError,
} from '../src/webhooks/address-guard';

const strict = { allowLoopback: false };
const development = { allowLoopback: true };

describe('the webhook address guard (SSRF)', () => {
  it('refuses private, link-local, metadata, reserved and loopback addresses, in every spelling', () => {
    const refused = [
      '10.0.0.1',
      '10.255.255.255',
      '172.16.0.1',
      '172.31.255.254',
      '192.168.1.10',
      '100.64.0.1',
      '169.254.169.254',
      '169.254.0.1',
      '0.0.0.0',
      '0.1.2.3',
      '192.0.0.170',
      '198.18.0.1',
      '224.0.0.1',
      '255.255.255.255',
      '192.0.2.1',
      '203.0.113.5',
      'fc00::1',
      'fd00:ec2::254',
      'fe80::1',
      'ff02::1',
      '::',
      '::ffff:10.0.0.1',
      '::ffff:169.254.169.254',
      '::ffff:a9fe:a9fe',
      '64:ff9b::a9fe:a9fe',
      '64:ff9b::10.1.2.3',
      '2002:a9fe:a9fe::1',
      '2001:db8::1',
    ];
    for (const address of refused) {
      expect(forbiddenAddressReason(address, strict), address).toMatch(/privée, locale, réservée ou de métadonnées/);
      // The development allowance is for loopback only.
      expect(forbiddenAddressReason(address, development), address).not.toBeNull();
    }
    for (const address of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1', '64:ff9b::7f00:1']) {
      expect(forbiddenAddressReason(address, strict), address).toMatch(/loopback/);
      expect(forbiddenAddressReason(address, development), address).toBeNull();
    }
  });

  it('lets public addresses through', () => {
    for (const address of [
      '93.184.216.34',
      '8.8.8.8',
      '172.32.0.1',
      '100.128.0.1',
      '2606:4700:4700::1111',
      '2a00:1450:4007:80e::200e',
      '64:ff9b::808:808',
    ]) {
      expect(forbiddenAddressReason(address, strict), address).toBeNull();
    }
  });

  it('checks the form of a URL: https only (http in development), no credentials, IP literals in any notation', () => {
    expect(checkWebhookUrlForm('https://hooks.exemple.fr/recevoir?x=1', { allowInsecure: false }).href).toBe(
      'https://hooks.exemple.fr/recevoir?x=1',
    );
    const refusals: [string, boolean, RegExp][] = [
      ['http://hooks.exemple.fr/', false, /https/],
      ['ftp://hooks.exemple.fr/', true, /https/],
      ['https://u:p@hooks.exemple.fr/', false, /identifiants/],
      ['https://hooks.exemple.fr/#x', false, /fragment/],
      ['https://2130706433/', false, /127\.0\.0\.1 : adresse de bouclage/],
      ['https://0x7f.1/', false, /loopback/],
      ['https://[::ffff:169.254.169.254]/', true, /métadonnées/],
      ['https://10.1.2.3:8443/', true, /privée/],
      ['pas une adresse', true, /adresse invalide/],
    ];
    for (const [url, allowInsecure, reason] of refusals) {
      expect(() => checkWebhookUrlForm(url, { allowInsecure }), url).toThrow(reason);
    }
    expect(checkWebhookUrlForm('http://127.0.0.1:4000/hooks', { allowInsecure: true }).port).toBe('4000');
  });

  it('resolves names and refuses one that points inside', async () => {
    await expect(checkWebhookUrl('https://localhost/', { allowInsecure: false })).rejects.toThrow(/localhost se résout en .*(loopback)/);
    await expect(checkWebhookUrl('http://localhost:4000/', { allowInsecure: true })).resolves.toBeInstanceOf(URL);
    await expect(checkWebhookUrl('https://nexiste-pas.invalid/', { allowInsecure: false })).rejects.toThrow(/ne se résout pas/);
  });

  it('is the lookup the delivery connects with: a forbidden answer never reaches the socket', async () => {
    const lookup = guardedLookup(strict);
    const outcome = await new Promise<{ error: unknown; address: unknown }>((resolve) => {
      lookup('localhost', { all: false }, (error, address) => resolve({ error, address }));
    });
    expect(outcome.error).toBeInstanceOf(WebhookAddressError);
    const allowed = await new Promise<{ error: unknown; addresses: unknown }>((resolve) => {
      guardedLookup(development)('localhost', { all: true }, (error, addresses) => resolve({ error, addresses }));
    });
    expect(allowed.error).toBeNull();
    expect(allowed.addresses).toEqual(expect.arrayContaining([expect.objectContaining({ family: expect.any(Number) })]));
  });
});
