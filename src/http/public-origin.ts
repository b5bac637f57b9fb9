import type { FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyInstance {
    /** PUBLIC_BASE_URL: the address clients reach this server at, when it is not the request's own. */
    readonly publicBaseUrl: string | null;
  }
}

/** PUBLIC_BASE_URL's origin, when it is set. */
export function configuredOrigin(publicBaseUrl: string | null): string | null {
  return publicBaseUrl ? new URL(publicBaseUrl).origin : null;
}

/**
 * The origin clients reach this server at: PUBLIC_BASE_URL's, else the request's own (its Host, and
 * X-Forwarded-* under TRUST_PROXY) when it makes a valid one; null when neither says it. Never the
 * address the server listens on, which a client has no business knowing.
 */
export function publicOrigin(request: FastifyRequest): string | null {
  const configured = configuredOrigin(request.server.publicBaseUrl);
  if (configured || !request.host) return configured;
  try {
    return new URL(`${request.protocol}://${request.host}`).origin;
  } catch {
    return null;
  }
}
