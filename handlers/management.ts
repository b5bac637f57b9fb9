import type { FastifyReply, FastifyRequest } from 'fastify';
import type { components, operations } from '../codegen/management';
import { type ApiKeyRecord, listApiKeysPage } from '../db/api-keys';
import type { DB } from '../db/connection';
import { findPortalSession } from '../db/portal';
import { ExpiryInThePast, issueApiKey, keyState, lastValidDay, revokeOrganisationKey } from '../src/api-keys';
import type { Config } from '../src/config';
import { ApiError } from '../src/http/errors';
import { csrfTokenOf } from '../src/http/management';
import { issuePortalLink } from '../src/portal';

/*
 * The operations of management.yaml. The caller is known and counted before any of them runs
 * (src/http/management.ts), and the organisation of the path exists; each change goes through the
 * one action that the operator's commands call too, which writes the audit log.
 */

type Operation<Id extends keyof operations> = operations[Id];
type QueryOf<Id extends keyof operations> = NonNullable<Operation<Id>['parameters']['query']>;
type ParamsOf<Id extends keyof operations> = NonNullable<Operation<Id>['parameters']['path']>;
type BodyOf<Id extends keyof operations> =
  Operation<Id> extends { requestBody: { content: { 'application/json': infer Body } } } ? Body : unknown;
type RequestOf<Id extends keyof operations> = FastifyRequest<{ Querystring: QueryOf<Id>; Params: ParamsOf<Id>; Body: BodyOf<Id> }>;

type ApiKey = components['schemas']['ApiKey'];
const defaultLimit = 50;
const defaultSessionLifetimeSeconds = 86_400;

/** A key as the management API shows it: never the key itself. */
export function apiKeyView(key: ApiKeyRecord, now = new Date()): ApiKey {
  return {
    id: key.id,
    label: key.label,
    prefix: key.key_prefix,
    scopes: key.scopes,
    expires_on: key.expires_at === null ? null : lastValidDay(key.expires_at),
    created_at: key.created_at.toISOString(),
    last_used_at: key.last_used_at?.toISOString() ?? null,
    revoked_at: key.revoked_at?.toISOString() ?? null,
    state: keyState(key, now),
  };
}

/** A list's position, opaque to callers: the last row's creation instant (to the microsecond) and id. */
function encodeCursor(position: { at: string; id: string }): string {
  return Buffer.from(JSON.stringify([position.at, position.id])).toString('base64url');
}

const instant = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function decodeCursor(cursor: string | undefined): { at: string; id: string } | null {
  if (cursor === undefined) return null;
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (typeof at === 'string' && instant.test(at) && typeof id === 'string' && uuid.test(id)) return { at, id };
  } catch {
    // Not JSON: the same refusal as a JSON of another shape.
  }
  throw new ApiError('invalid_parameter', 'Le paramètre « cursor » n’est pas un curseur valide : reprenez celui de next_cursor.', {
    param: 'cursor',
  });
}

export function createManagementHandlers(context: { db: DB; config: Config }) {
  const { db, config } = context;
  return {
    async getPortalSession(request: RequestOf<'getPortalSession'>) {
      const session = request.portalSession!;
      const found = await findPortalSession(db, session.id);
      if (!found) throw new ApiError('session_expired');
      return {
        organisation: { id: found.org_id, name: found.org_name },
        actor_email: found.actor_email,
        read_only: found.read_only,
        expires_at: found.expires_at.toISOString(),
        csrf_token: csrfTokenOf(session.token),
      };
    },

    async createPortalLink(request: RequestOf<'createPortalLink'>, reply: FastifyReply) {
      const { actor_email, read_only, session_lifetime_seconds } = request.body;
      const sessionLifetimeSeconds = session_lifetime_seconds ?? defaultSessionLifetimeSeconds;
      // The administrator's browser reaches the server at its public address, when the platform calls it another way.
      const baseUrl = config.publicBaseUrl ?? `${request.protocol}://${request.host}`;
      const link = await issuePortalLink(
        db,
        { orgId: request.params.org_id, actorEmail: actor_email, readOnly: read_only ?? false, sessionLifetimeSeconds },
        request.actor,
        baseUrl,
      );
      return reply
        .code(201)
        .send({ url: link.url, expires_at: link.expiresAt.toISOString(), session_lifetime_seconds: sessionLifetimeSeconds });
    },

    async listApiKeys(request: RequestOf<'listApiKeys'>) {
      const limit = request.query.limit ?? defaultLimit;
      const rows = await listApiKeysPage(db, request.params.org_id, {
        state: request.query.state,
        after: decodeCursor(request.query.cursor),
        limit,
      });
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      const hasMore = rows.length > limit;
      return {
        data: page.map((row) => apiKeyView(row)),
        has_more: hasMore,
        next_cursor: hasMore && last ? encodeCursor({ at: last.position, id: last.id }) : null,
      };
    },

    async createApiKey(request: RequestOf<'createApiKey'>, reply: FastifyReply) {
      const { label, scopes, expires_on } = request.body;
      const issued = await issueApiKey(
        db,
        {
          orgId: request.params.org_id,
          label,
          scopes: [...new Set(['read' as const, ...(scopes ?? ['read'])])],
          expiresOn: expires_on ?? null,
        },
        request.actor,
      ).catch((error: unknown) => {
        if (!(error instanceof ExpiryInThePast)) throw error;
        throw new ApiError(
          'invalid_body',
          `Corps de la requête invalide : « expires_on » ${error.expiresOn} est déjà passé (nous sommes le ${error.today}, heure de Paris).`,
          { param: 'expires_on' },
        );
      });
      return reply.code(201).send({ api_key: apiKeyView(issued.apiKey), key: issued.key });
    },

    async revokeApiKey(request: RequestOf<'revokeApiKey'>) {
      const revoked = await revokeOrganisationKey(db, request.params.org_id, request.params.key_id, request.actor);
      if (revoked === null) throw new ApiError('unknown_api_key');
      return { api_key: apiKeyView(revoked.key), already_revoked: !revoked.revokedNow };
    },
  };
}
