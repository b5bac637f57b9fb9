import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import {
  checkWebhookUrl,
  checkWebhookUrlForm,
  forbiddenAddressReason,
  guardedLookup,
  WebhookAddressError,
} from '../src/webhooks/address-guard';
import { createWebhookAgents, postWebhook } from '../src/webhooks/http-post';

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

describe('a failed POST of a delivery', () => {
  const agents = createWebhookAgents();
  afterAll(() => agents.close());
  const post = (url: string) =>
    postWebhook(agents, { url, headers: { 'content-type': 'application/json' }, body: '{}', timeoutMs: 2000, allowInsecure: true });

  it('says why in a stable code as well as in words: no service, no name, no TLS, a cut connection', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const plain = createServer((_request, response) => response.end('ok'));
    const cutting = createServer((request) => request.socket.destroy());
    for (const server of [plain, cutting]) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const cases: [string, string][] = [
        [`http://127.0.0.1:${closedPort}/hooks`, 'connection_refused'],
        ['https://nexiste-pas.invalid/hooks', 'dns_failure'],
        [`https://127.0.0.1:${(plain.address() as AddressInfo).port}/hooks`, 'tls_error'],
        [`http://127.0.0.1:${(cutting.address() as AddressInfo).port}/hooks`, 'connection_reset'],
      ];
      for (const [url, code] of cases) {
        const outcome = await post(url);
        expect(outcome, url).toMatchObject({ succeeded: false, statusCode: null, errorCode: code, error: expect.stringMatching(/\S/) });
      }
      expect(await post(`http://127.0.0.1:${(plain.address() as AddressInfo).port}/hooks`)).toMatchObject({
        succeeded: true,
        error: null,
        errorCode: null,
      });
    } finally {
      plain.close();
      cutting.close();
    }
  });
});
