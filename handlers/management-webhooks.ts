import type { FastifyReply } from 'fastify';
import type { components } from '../codegen/management';
import type { DB } from '../db/connection';
import { type EndpointRecord, findEndpoint, type LoggedDelivery, listDeliveriesPage, listEndpointsPage } from '../db/webhook-endpoints';
import { type EventData, subscribableEventTypes } from '../db/webhooks';
import type { Config } from '../src/config';
import { ApiError } from '../src/http/errors';
import { webhookEventCatalogue, webhookExampleData } from '../src/openapi-document';
import {
  changeWebhookEndpoint,
  EndpointDisabled,
  EndpointLimitReached,
  recoverWebhookDeliveries,
  registerWebhookEndpoint,
  removeWebhookEndpoint,
  replayWebhookDelivery,
  resumeWebhookEndpoint,
  rotateWebhookEndpointSecret,
  sendWebhookExampleEvent,
  sendWebhookPing,
} from '../src/webhook-endpoints';
import { WebhookAddressError } from '../src/webhooks/address-guard';
import { cursorPage, decodeCursor, defaultLimit, type RequestOf, timeWindow } from './management-common';

type WebhookEndpoint = components['schemas']['WebhookEndpoint'];
type WebhookDelivery = components['schemas']['WebhookDelivery'];

/** An endpoint as the management API shows it: never its secret. */
export function endpointView(endpoint: EndpointRecord, now = new Date()): WebhookEndpoint {
  return {
    id: endpoint.id,
    url: endpoint.url,
    event_types: endpoint.event_types as WebhookEndpoint['event_types'],
    state: endpoint.enabled ? 'active' : 'disabled',
    disabled_reason: endpoint.disabled_reason,
    disabled_at: endpoint.disabled_at?.toISOString() ?? null,
    consecutive_failures: endpoint.consecutive_failures,
    previous_secret_expires_at:
      endpoint.previous_secret_expires_at && endpoint.previous_secret_expires_at > now
        ? endpoint.previous_secret_expires_at.toISOString()
        : null,
    created_at: endpoint.created_at.toISOString(),
  };
}

/** A delivery of the log, with its latest attempts. */
export function deliveryView(delivery: LoggedDelivery): WebhookDelivery {
  return {
    id: delivery.id,
    endpoint_id: delivery.endpoint_id,
    event_id: delivery.event_id,
    event_type: delivery.event_type as WebhookDelivery['event_type'],
    status: delivery.status,
    // None is planned while the endpoint is disabled: its deliveries wait for it.
    next_attempt_at:
      delivery.status === 'pending' && delivery.job_id !== null && delivery.endpoint_enabled
        ? delivery.next_attempt_at.toISOString()
        : null,
    created_at: delivery.created_at.toISOString(),
    delivered_at: delivery.delivered_at?.toISOString() ?? null,
    dead_at: delivery.dead_at?.toISOString() ?? null,
    replay_count: delivery.replay_count,
    attempt_total: delivery.attempt_total,
    payload: delivery.body,
    attempts: delivery.attempts.map((attempt) => ({
      attempted_at: attempt.attempted_at.toISOString(),
      duration_ms: attempt.duration_ms,
      status_code: attempt.status_code,
      succeeded: attempt.succeeded,
      error: attempt.error,
      error_code: attempt.error_code,
      response_excerpt: attempt.response_excerpt,
    })),
  };
}

/** How far back a recovery reaches, as management.yaml says. */
const recoveryDays = 30;

function unknownEndpoint(): never {
  throw new ApiError('unknown_webhook_endpoint');
}

/** The refusal of an address that is not a public https one, naming why. */
function refusedAddress(error: unknown): never {
  if (error instanceof WebhookAddressError)
    throw new ApiError('webhook_url_refused', `Adresse refusée : ${error.message}.`, { param: 'url' });
  throw error;
}

export function createWebhookHandlers(context: { db: DB; config: Config; openapi: Record<string, any> }) {
  const { db, config } = context;
  const policy = { allowInsecure: config.webhookAllowInsecure };

  /** One delivery of the organisation as the log shows it. */
  async function loggedDelivery(orgId: string, deliveryId: string): Promise<WebhookDelivery> {
    const [delivery] = await listDeliveriesPage(db, orgId, { deliveryId }, null, 1);
    if (!delivery) throw new ApiError('unknown_webhook_delivery');
    return deliveryView(delivery);
  }

  const eventCatalogue = webhookEventCatalogue(context.openapi, subscribableEventTypes);

  return {
    async listWebhookEventTypes() {
      return { data: eventCatalogue };
    },

    async listWebhookEndpoints(request: RequestOf<'listWebhookEndpoints'>) {
      const limit = request.query.limit ?? defaultLimit;
      const rows = await listEndpointsPage(db, request.params.org_id, decodeCursor(request.query.cursor), limit);
      return cursorPage(rows, limit, (row) => endpointView(row));
    },

    async createWebhookEndpoint(request: RequestOf<'createWebhookEndpoint'>, reply: FastifyReply) {
      const { url, event_types } = request.body;
      const created = await registerWebhookEndpoint(
        db,
        { orgId: request.params.org_id, url, eventTypes: event_types ?? subscribableEventTypes },
        request.actor,
        policy,
      ).catch((error: unknown) => {
        if (error instanceof EndpointLimitReached) throw new ApiError('endpoint_limit_reached');
        return refusedAddress(error);
      });
      return reply.code(201).send({ endpoint: endpointView(created.endpoint), secret: created.secret });
    },

    async updateWebhookEndpoint(request: RequestOf<'updateWebhookEndpoint'>) {
      const { org_id, endpoint_id } = request.params;
      const { url, event_types } = request.body;
      const updated = await changeWebhookEndpoint(db, org_id, endpoint_id, { url, eventTypes: event_types }, request.actor, policy).catch(
        refusedAddress,
      );
      return updated === null ? unknownEndpoint() : endpointView(updated);
    },

    async deleteWebhookEndpoint(request: RequestOf<'deleteWebhookEndpoint'>, reply: FastifyReply) {
      const removed = await removeWebhookEndpoint(db, request.params.org_id, request.params.endpoint_id, request.actor);
      if (removed === null) unknownEndpoint();
      return reply.code(204).send();
    },

    async enableWebhookEndpoint(request: RequestOf<'enableWebhookEndpoint'>) {
      const enabled = await resumeWebhookEndpoint(db, request.params.org_id, request.params.endpoint_id, request.actor);
      if (enabled === null) unknownEndpoint();
      const { resumed_deliveries, ...endpoint } = enabled;
      return { endpoint: endpointView(endpoint), resumed_deliveries };
    },

    async rotateWebhookSecret(request: RequestOf<'rotateWebhookSecret'>) {
      const rotated = await rotateWebhookEndpointSecret(db, request.params.org_id, request.params.endpoint_id, request.actor);
      return rotated === null ? unknownEndpoint() : { endpoint: endpointView(rotated.endpoint), secret: rotated.secret };
    },

    async sendWebhookTest(request: RequestOf<'sendWebhookTest'>, reply: FastifyReply) {
      const { org_id, endpoint_id } = request.params;
      const sent = await sendWebhookPing(db, org_id, endpoint_id, request.actor);
      if (sent === null) unknownEndpoint();
      return reply.code(202).send(await loggedDelivery(org_id, sent.deliveryId));
    },

    async sendWebhookExample(request: RequestOf<'sendWebhookExample'>, reply: FastifyReply) {
      const { org_id, endpoint_id } = request.params;
      const eventType = request.body.event_type;
      const example = { eventType, data: webhookExampleData(context.openapi, eventType) as EventData<typeof eventType> };
      const sent = await sendWebhookExampleEvent(db, org_id, endpoint_id, example, request.actor);
      if (sent === null) unknownEndpoint();
      return reply.code(202).send(await loggedDelivery(org_id, sent.deliveryId));
    },

    async recoverWebhookDeliveries(request: RequestOf<'recoverWebhookDeliveries'>, reply: FastifyReply) {
      const { org_id, endpoint_id } = request.params;
      const since = new Date(request.body.since);
      if (Date.now() - since.getTime() > recoveryDays * 86_400_000)
        throw new ApiError('invalid_body', `Corps de la requête invalide : « since » remonte à ${recoveryDays} jours au plus.`, {
          param: 'since',
        });
      const recovered = await recoverWebhookDeliveries(db, org_id, endpoint_id, since, request.actor).catch((error: unknown) => {
        if (error instanceof EndpointDisabled) throw new ApiError('endpoint_disabled');
        throw error;
      });
      return recovered === null ? unknownEndpoint() : reply.code(202).send(recovered);
    },

    async listWebhookDeliveries(request: RequestOf<'listWebhookDeliveries'>) {
      const { org_id } = request.params;
      const { endpoint_id, status, event_type, since, until, cursor } = request.query;
      const limit = request.query.limit ?? defaultLimit;
      const window = timeWindow(since, until);
      if (endpoint_id !== undefined && !(await findEndpoint(db, org_id, endpoint_id))) unknownEndpoint();
      const rows = await listDeliveriesPage(
        db,
        org_id,
        { endpointId: endpoint_id, status, eventType: event_type, ...window },
        decodeCursor(cursor),
        limit,
      );
      return cursorPage(rows, limit, deliveryView);
    },

    async replayWebhookDelivery(request: RequestOf<'replayWebhookDelivery'>, reply: FastifyReply) {
      const { org_id, delivery_id } = request.params;
      const replayed = await replayWebhookDelivery(db, org_id, delivery_id, request.actor);
      if (replayed === null) throw new ApiError('unknown_webhook_delivery');
      if (!replayed.replayed) throw new ApiError('delivery_pending');
      return reply.code(202).send(await loggedDelivery(org_id, delivery_id));
    },
  };
}
