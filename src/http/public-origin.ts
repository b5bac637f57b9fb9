import type { Socket } from 'node:net';
import type { FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyInstance {
    /** PUBLIC_BASE_URL: the address clients reach this server at, when it is not the request's own. */
    readonly publicBaseUrl: string | null;
  }
}

/**
 * The origin clients reach this server at: PUBLIC_BASE_URL's, else the request's (its Host, and
 * X-Forwarded-* under TRUST_PROXY), else, with no Host or no request yet, the address the
 * connection came to.
 */
export function publicOrigin(publicBaseUrl: string | null, socket: Socket, request?: FastifyRequest): string {
  if (publicBaseUrl) return new URL(publicBaseUrl).origin;
  if (request?.host) return `${request.protocol}://${request.host}`;
  const address = socket.localAddress?.includes(':') ? `[${socket.localAddress}]` : socket.localAddress;
  return `${request?.protocol ?? 'http'}://${address}:${socket.localPort}`;
}

/** The origin clients reach this server at, for a request. */
export function requestOrigin(request: FastifyRequest): string {
  return publicOrigin(request.server.publicBaseUrl, request.socket, request);
}
