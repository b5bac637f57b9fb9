import http from 'node:http';
import https from 'node:https';
import type { WebhookFailureCode } from '../../db/tables/webhooks';
import type { AttemptOutcome } from '../../db/webhooks';
import { checkWebhookUrlForm, guardedLookup, WebhookAddressError } from './address-guard';

const excerptCharacters = 300;
/** Beyond this the rest of a response is not read (the connection is dropped instead of reused). */
const maxResponseBytes = 64 * 1024;

/**
 * Keep-alive pools (a receiver under a steady stream gets a few reused connections, not one each),
 * owned by the worker that sends: `close` ends their connections when it stops.
 */
export function createWebhookAgents() {
  const agents = {
    'http:': new http.Agent({ keepAlive: true, maxSockets: 64 }),
    'https:': new https.Agent({ keepAlive: true, maxSockets: 64 }),
  };
  return {
    for: (protocol: string) => agents[protocol as 'http:' | 'https:'],
    close() {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}
export type WebhookAgents = ReturnType<typeof createWebhookAgents>;

/** Why a request that got no status failed: its French sentence, and its stable code. */
function failureOf(error: unknown): Pick<AttemptOutcome, 'error' | 'errorCode'> {
  if (error instanceof WebhookAddressError) return { error: `adresse refusée : ${error.message}`, errorCode: 'address_refused' };
  const code = (error as NodeJS.ErrnoException).code ?? '';
  const message = error instanceof Error ? error.message : String(error);
  return { error: code && !message.includes(code) ? `${message} (${code})` : message, errorCode: failureCodeOf(code, message) };
}

/** Node's error codes (system calls, DNS, OpenSSL) grouped as the delivery log names them. */
function failureCodeOf(code: string, message: string): WebhookFailureCode {
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns_failure';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ECONNRESET' || code === 'EPIPE' || message === 'socket hang up') return 'connection_reset';
  if (
    /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/.test(code) ||
    (code === 'EPROTO' && message.includes('SSL routines'))
  )
    return 'tls_error';
  return 'connection_error';
}

type PostResult = Pick<AttemptOutcome, 'statusCode' | 'error' | 'errorCode' | 'responseExcerpt'>;

/**
 * One POST of a delivery. A 2xx status received within `timeoutMs` (DNS, connection and answer
 * included) is a success; anything else fails. Redirects are not followed. The address is checked
 * again here, on the address actually connected to.
 */
export async function postWebhook(
  agents: WebhookAgents,
  request: {
    url: string;
    headers: Record<string, string>;
    body: string;
    timeoutMs: number;
    allowInsecure: boolean;
  },
): Promise<AttemptOutcome> {
  const attemptedAt = new Date();
  const started = performance.now();
  const finish = (fields: PostResult): AttemptOutcome => ({
    attemptedAt,
    durationMs: Math.round(performance.now() - started),
    succeeded: fields.error === null && fields.statusCode !== null && fields.statusCode >= 200 && fields.statusCode < 300,
    ...fields,
  });

  let url: URL;
  try {
    url = checkWebhookUrlForm(request.url, { allowInsecure: request.allowInsecure });
  } catch (error) {
    return finish({ statusCode: null, ...failureOf(error), responseExcerpt: null });
  }
  return send(agents, url, request, finish);
}

/** The request itself: the body sent, then the answer's status and the start of its body read, within the reply time. */
function send(
  agents: WebhookAgents,
  url: URL,
  request: { headers: Record<string, string>; body: string; timeoutMs: number; allowInsecure: boolean },
  finish: (fields: PostResult) => AttemptOutcome,
): Promise<AttemptOutcome> {
  const body = Buffer.from(request.body, 'utf8');
  return new Promise<AttemptOutcome>((resolve) => {
    let statusCode: number | null = null;
    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;
    // Once a status has arrived it decides; before that, the failure (timeout, connection) does.
    const settle = (failureWithoutStatus: Pick<AttemptOutcome, 'error' | 'errorCode'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const excerpt = chunks.length > 0 ? Buffer.concat(chunks).toString('utf8').slice(0, excerptCharacters) : null;
      const failure =
        statusCode === null
          ? failureWithoutStatus
          : statusCode >= 200 && statusCode < 300
            ? { error: null, errorCode: null }
            : { error: `réponse HTTP ${statusCode}`, errorCode: 'http_status' as const };
      resolve(finish({ statusCode, ...failure, responseExcerpt: excerpt }));
    };

    const client = url.protocol === 'https:' ? https : http;
    const outgoing = client.request(
      url,
      {
        method: 'POST',
        agent: agents.for(url.protocol),
        lookup: guardedLookup({ allowLoopback: request.allowInsecure }),
        headers: { ...request.headers, 'Content-Length': String(body.length) },
      },
      (response) => {
        statusCode = response.statusCode ?? null;
        response.on('data', (chunk: Buffer) => {
          if (received < maxResponseBytes) chunks.push(chunk);
          received += chunk.length;
          if (received > maxResponseBytes) {
            response.destroy();
            settle({ error: 'réponse trop longue', errorCode: 'connection_error' });
          }
        });
        response.on('end', () => settle({ error: 'réponse vide', errorCode: 'connection_error' }));
        response.on('error', (error) => settle(failureOf(error)));
      },
    );
    // The reply time covers everything: a status that arrives in time counts even if the rest of
    // the body is late (then the connection is dropped).
    const timer = setTimeout(() => {
      settle({ error: `délai de réponse dépassé (${request.timeoutMs} ms)`, errorCode: 'timeout' });
      outgoing.destroy();
    }, request.timeoutMs);
    outgoing.on('error', (error) => settle(failureOf(error)));
    outgoing.end(body);
  });
}
