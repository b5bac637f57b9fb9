import { lookup } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * The SSRF guard: a webhook URL must be https and reach only public addresses. It is checked when
 * the endpoint is created AND at every attempt, on the address actually connected to (the lookup
 * below is the one the HTTP client uses), so that a DNS answer changed in between (rebinding)
 * cannot aim a delivery at the internal network. `allowInsecure` (WEBHOOK_ALLOW_INSECURE=1, local
 * development and tests) allows plain http and loopback, never private or metadata addresses.
 */
export class WebhookAddressError extends Error {
  override name = 'WebhookAddressError';
}

const forbidden = new BlockList();
const loopback = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  forbidden.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 128],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  forbidden.addSubnet(network, prefix, 'ipv6');
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/** The IPv4 address an IPv6 one carries (NAT64 64:ff9b::/96, 6to4 2002::/16), if any. */
function embeddedIpv4(address: string): string | null {
  const groups = expandIpv6(address);
  if (!groups) return null;
  const asIpv4 = (high: number, low: number) => [high >> 8, high & 255, low >> 8, low & 255].join('.');
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((g) => g === 0)) return asIpv4(groups[6]!, groups[7]!);
  if (groups[0] === 0x2002) return asIpv4(groups[1]!, groups[2]!);
  return null;
}

function expandIpv6(address: string): number[] | null {
  let text = address.toLowerCase().split('%')[0]!;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    text = text.slice(0, -dotted[1]!.length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const missing = 8 - headGroups.length - tailGroups.length;
  if (tail === undefined ? headGroups.length !== 8 : missing < 0) return null;
  return [...headGroups, ...Array(tail === undefined ? 0 : missing).fill('0'), ...tailGroups].map((g) => parseInt(g, 16));
}

/** Why an address may not receive webhooks, or null when it may. */
export function forbiddenAddressReason(address: string, options: { allowLoopback: boolean }): string | null {
  const family = isIP(address);
  if (family === 0) return 'adresse IP invalide';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (loopback.check(address, type) || (family === 6 && embeddedIpv4(address) !== null && loopback.check(embeddedIpv4(address)!, 'ipv4'))) {
    return options.allowLoopback ? null : 'adresse de bouclage (loopback)';
  }
  const carried = family === 6 ? embeddedIpv4(address) : null;
  if (forbidden.check(address, type) || (carried !== null && forbidden.check(carried, 'ipv4'))) {
    return 'adresse privée, locale, réservée ou de métadonnées';
  }
  return null;
}

/**
 * The DNS lookup the delivery client connects with: it resolves, then refuses the whole answer if
 * any address is forbidden (an attacker's DNS may mix a public address with an internal one).
 */
export function guardedLookup(options: { allowLoopback: boolean }): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    lookup(hostname, { ...lookupOptions, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const list = addresses as unknown as { address: string; family: number }[];
      const refused = list.map((entry) => ({ entry, reason: forbiddenAddressReason(entry.address, options) })).find((r) => r.reason);
      if (refused) return callback(new WebhookAddressError(`${hostname} se résout en ${refused.entry.address} : ${refused.reason}`), '', 0);
      // No address is a name that does not resolve, as the resolver's own ENOTFOUND says.
      if (list.length === 0)
        return callback(Object.assign(new Error(`${hostname} ne se résout en aucune adresse`), { code: 'ENOTFOUND' }), '', 0);
      if (lookupOptions.all) return (callback as unknown as (e: null, a: typeof list) => void)(null, list);
      return callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

/** The hostname as the connection sees it (IPv6 literals lose their brackets). */
function bareHostname(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/** Checks a URL's form and the addresses it points at now; throws WebhookAddressError (French). */
export async function checkWebhookUrl(raw: string, options: { allowInsecure: boolean }): Promise<URL> {
  const url = checkWebhookUrlForm(raw, options);
  const host = bareHostname(url);
  if (isIP(host)) return url;
  await new Promise<void>((resolve, reject) => {
    guardedLookup({ allowLoopback: options.allowInsecure })(host, { all: true }, (error) => {
      if (!error) return resolve();
      reject(
        error instanceof WebhookAddressError
          ? error
          : new WebhookAddressError(`${host} ne se résout pas (${(error as NodeJS.ErrnoException).code ?? error.message})`),
      );
    });
  });
  return url;
}

/** The checks that need no DNS: scheme, credentials, and an IP literal's range. */
export function checkWebhookUrlForm(raw: string, options: { allowInsecure: boolean }): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookAddressError(`adresse invalide : « ${raw} »`);
  }
  const schemes = options.allowInsecure ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol))
    throw new WebhookAddressError(`l’adresse doit être en https (reçu « ${url.protocol.slice(0, -1)} »)`);
  if (url.username || url.password) throw new WebhookAddressError('l’adresse ne doit pas contenir d’identifiants');
  if (url.hash) throw new WebhookAddressError('l’adresse ne doit pas contenir de fragment (#)');
  const host = bareHostname(url);
  if (isIP(host)) {
    const reason = forbiddenAddressReason(host, { allowLoopback: options.allowInsecure });
    if (reason) throw new WebhookAddressError(`${host} : ${reason}`);
  }
  return url;
}
