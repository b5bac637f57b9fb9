import type { FastifyReply } from 'fastify';
import type { components } from '../codegen/management';
import { keyUsageByDay } from '../db/api-key-usage';
import { type ApiKeyRecord, listApiKeysPage } from '../db/api-keys';
import { listAuditEvents } from '../db/audit';
import type { DB } from '../db/connection';
import { organisationOverview } from '../db/overview';
import { formatParisDate } from '../db/paris-time';
import { ExpiryInThePast, issueApiKey, keyState, lastValidDay, revokeOrganisationKey } from '../src/api-keys';
import type { Config } from '../src/config';
import { ApiError } from '../src/http/errors';
import { csrfTokenOf, sessionCookieName, sessionCookieOptions } from '../src/http/management';
import { issuePortalLink, logOutPortalSession, revokeOrganisationSessions } from '../src/portal';
import { cursorPage, decodeCursor, defaultLimit, type RequestOf, timeWindow } from './management-common';
import { createWebhookHandlers } from './management-webhooks';

/*
 * The operations of management.yaml. The caller is known and counted before any of them runs
 * (src/http/management.ts), and the organisation of the path exists; each change goes through the
 * one action that the operator's commands call too, which writes the audit log.
 */

type ApiKey = components['schemas']['ApiKey'];
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

/** What the handlers need: the database, the settings, and openapi.yaml as the server parsed it (the webhooks' catalogue and examples). */
export interface ManagementHandlerContext {
  db: DB;
  config: Config;
  openapi: Record<string, any>;
}

export function createManagementHandlers(context: ManagementHandlerContext) {
  const { db, config } = context;
  return {
    ...createWebhookHandlers(context),

    async getPortalSession(request: RequestOf<'getPortalSession'>) {
      // The hook found the session, live, as it counted this request.
      const session = request.portalSession!;
      return {
        organisation: { id: session.orgId, name: session.orgName },
        actor_email: session.actorEmail,
        read_only: session.readOnly,
        expires_at: session.expiresAt.toISOString(),
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

    async endPortalSession(request: RequestOf<'endPortalSession'>, reply: FastifyReply) {
      const session = request.portalSession!;
      await logOutPortalSession(db, session, request.actor);
      return reply.clearCookie(sessionCookieName(request), sessionCookieOptions(request)).code(204).send();
    },

    async revokePortalSessions(request: RequestOf<'revokePortalSessions'>) {
      const revoked = await revokeOrganisationSessions(db, request.params.org_id, request.body.actor_email ?? null, request.actor);
      return { revoked };
    },

    async getOrganisationOverview(request: RequestOf<'getOrganisationOverview'>) {
      const orgId = request.params.org_id;
      const overview = await organisationOverview(db, orgId);
      const licences = (counts: { total: number; disponibles: number; utilisees: number }) => ({
        total: counts.total,
        available: counts.disponibles,
        used: counts.utilisees,
      });
      return {
        organisation: overview.organisation,
        learners: { total: overview.summary.utilisateurs.total, active: overview.summary.utilisateurs.actifs },
        licences: { standard: licences(overview.summary.licences.standard), tutorat: licences(overview.summary.licences.tutorat) },
        api_keys: overview.keys,
        webhook_endpoints: overview.endpoints,
        events_last_30_days: overview.events.map((row) => ({ event_type: row.type, count: row.count })),
      };
    },

    async getApiUsage(request: RequestOf<'getApiUsage'>) {
      const days = request.query.days ?? 30;
      const to = formatParisDate(new Date());
      const from = formatParisDate(new Date(Date.parse(`${to}T12:00:00Z`) - (days - 1) * 86_400_000));
      const keys = await keyUsageByDay(db, request.params.org_id, from, to);
      const now = new Date();
      return {
        from,
        to,
        keys: keys.map((key) => ({
          key_id: key.key_id,
          label: key.label,
          prefix: key.key_prefix,
          state: keyState(key, now),
          days: key.days,
        })),
      };
    },

    async listAuditEvents(request: RequestOf<'listAuditEvents'>) {
      const { action, outcome, since, until, cursor } = request.query;
      const limit = request.query.limit ?? defaultLimit;
      const after = decodeCursor(cursor, 'identity');
      const rows = await listAuditEvents(
        db,
        request.params.org_id,
        { action, outcome, ...timeWindow(since, until) },
        after?.id ?? null,
        limit,
      );
      return cursorPage(
        rows.map((row) => ({ ...row, id: String(row.id), position: row.occurred_at.toISOString() })),
        limit,
        (row) => ({
          id: row.id,
          occurred_at: row.occurred_at.toISOString(),
          actor: { kind: row.actor_kind, email: row.actor_email },
          action: row.action,
          target: row.target_kind === null || row.target_id === null ? null : { kind: row.target_kind, id: row.target_id },
          outcome: row.outcome,
          refusal_code: row.refusal_code,
          details: row.details as Record<string, unknown>,
        }),
      );
    },

    async listApiKeys(request: RequestOf<'listApiKeys'>) {
      const limit = request.query.limit ?? defaultLimit;
      const rows = await listApiKeysPage(db, request.params.org_id, {
        state: request.query.state,
        after: decodeCursor(request.query.cursor),
        limit,
      });
      return cursorPage(rows, limit, (row) => apiKeyView(row));
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
