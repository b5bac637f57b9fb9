import { recordAuditEvent } from '../db/audit';
import type { DB } from '../db/connection';
import type { AuditTargetKind } from '../db/tables';
import {
  countEndpointsLocked,
  createEndpoint,
  deleteEndpoint,
  disableEndpoint,
  type EndpointRecord,
  enableEndpoint,
  endpointLimit,
  findEndpoint,
  recoverDeadDeliveries,
  replayDelivery,
  rotateEndpointSecret,
  sendToEndpoint,
  updateEndpoint,
} from '../db/webhook-endpoints';
import type { EventData, EventType } from '../db/webhooks';
import type { Actor } from './api-keys';
import { loadOpenapiDocument, webhookExampleData } from './openapi-document';
import { checkWebhookUrl } from './webhooks/address-guard';
import { generateWebhookSecret } from './webhooks/signature';

/*
 * The changes to an organisation's webhook endpoints and deliveries: one implementation of each,
 * behind the management API and the operator's commands. Each writes the audit log in the
 * change's transaction, and answers null when the organisation has no such endpoint or delivery.
 */

/** The organisation already has the most endpoints it may have. */
export class EndpointLimitReached extends Error {
  override name = 'EndpointLimitReached';
}

/** Deliveries of a disabled endpoint cannot be sent again: it must be enabled first. */
export class EndpointDisabled extends Error {
  override name = 'EndpointDisabled';
}

/** Whether an address may be on the loopback or a private network (development and tests only). */
export interface AddressPolicy {
  allowInsecure: boolean;
}

/**
 * Runs a change in a transaction and, when it found what it changes, writes its audit line there:
 * both commit or neither does.
 */
async function audited<Result>(
  db: DB,
  audit: { orgId: string; actor: Actor; action: string; targetKind: AuditTargetKind; targetId: string },
  change: (trx: DB) => Promise<Result | null>,
  details: (result: Result) => Record<string, unknown> = () => ({}),
): Promise<Result | null> {
  return db.transaction().execute(async (trx) => {
    const result = await change(trx);
    if (result === null) return null;
    await recordAuditEvent(trx, {
      orgId: audit.orgId,
      actor: audit.actor,
      action: audit.action,
      target: { kind: audit.targetKind, id: audit.targetId },
      outcome: 'succeeded',
      details: details(result),
      requestId: audit.actor.requestId ?? null,
      clientAddress: audit.actor.clientAddress ?? null,
    });
    return result;
  });
}

/**
 * Registers an endpoint: its address checked (https, public; WebhookAddressError otherwise), at
 * most `endpointLimit` per organisation (EndpointLimitReached). Returns its secret, which nothing
 * else ever shows again.
 */
export async function registerWebhookEndpoint(
  db: DB,
  request: { orgId: string; url: string; eventTypes: readonly string[] },
  actor: Actor,
  policy: AddressPolicy,
): Promise<{ endpoint: EndpointRecord; secret: string }> {
  const url = await checkWebhookUrl(request.url, policy);
  const secret = generateWebhookSecret();
  return db.transaction().execute(async (trx) => {
    if ((await countEndpointsLocked(trx, request.orgId)) >= endpointLimit) throw new EndpointLimitReached();
    const endpoint = await createEndpoint(trx, { orgId: request.orgId, url: url.href, secret, eventTypes: request.eventTypes });
    await recordAuditEvent(trx, {
      orgId: request.orgId,
      actor,
      action: 'createWebhookEndpoint',
      target: { kind: 'webhook_endpoint', id: endpoint.id },
      outcome: 'succeeded',
      details: { url: endpoint.url, event_types: endpoint.event_types },
      requestId: actor.requestId ?? null,
      clientAddress: actor.clientAddress ?? null,
    });
    return { endpoint, secret };
  });
}

/** A new address (checked as at creation) or new event types. */
export async function changeWebhookEndpoint(
  db: DB,
  orgId: string,
  endpointId: string,
  change: { url?: string; eventTypes?: readonly string[] },
  actor: Actor,
  policy: AddressPolicy,
) {
  const url = change.url === undefined ? undefined : (await checkWebhookUrl(change.url, policy)).href;
  return audited(
    db,
    { orgId, actor, action: 'updateWebhookEndpoint', targetKind: 'webhook_endpoint', targetId: endpointId },
    (trx) => updateEndpoint(trx, orgId, endpointId, { url, eventTypes: change.eventTypes }),
    (endpoint) => ({ url: endpoint.url, event_types: endpoint.event_types }),
  );
}

/** Deletes an endpoint with its delivery log; the audit line keeps its address. */
export async function removeWebhookEndpoint(db: DB, orgId: string, endpointId: string, actor: Actor) {
  return audited(
    db,
    { orgId, actor, action: 'deleteWebhookEndpoint', targetKind: 'webhook_endpoint', targetId: endpointId },
    (trx) => deleteEndpoint(trx, orgId, endpointId),
    (endpoint) => ({ url: endpoint.url }),
  );
}

/** Enables an endpoint again and resumes its pending deliveries. */
export async function resumeWebhookEndpoint(db: DB, orgId: string, endpointId: string, actor: Actor) {
  return audited(
    db,
    { orgId, actor, action: 'enableWebhookEndpoint', targetKind: 'webhook_endpoint', targetId: endpointId },
    (trx) => enableEndpoint(trx, orgId, endpointId),
    (enabled) => ({ resumed_deliveries: enabled.resumed_deliveries }),
  );
}

/** Disables an endpoint (the operator's command): nothing is attempted, its deliveries wait. */
export async function suspendWebhookEndpoint(db: DB, orgId: string, endpointId: string, actor: Actor) {
  return audited(db, { orgId, actor, action: 'disableWebhookEndpoint', targetKind: 'webhook_endpoint', targetId: endpointId }, (trx) =>
    disableEndpoint(trx, orgId, endpointId),
  );
}

/** A new signing secret, returned once; the previous one keeps signing for 24 hours. */
export async function rotateWebhookEndpointSecret(db: DB, orgId: string, endpointId: string, actor: Actor) {
  const secret = generateWebhookSecret();
  const endpoint = await audited(
    db,
    { orgId, actor, action: 'rotateWebhookSecret', targetKind: 'webhook_endpoint', targetId: endpointId },
    (trx) => rotateEndpointSecret(trx, orgId, endpointId, secret),
  );
  return endpoint === null ? null : { endpoint, secret };
}

/** The test button: a signed `ping` to this endpoint only. */
export async function sendWebhookPing(db: DB, orgId: string, endpointId: string, actor: Actor) {
  return audited(
    db,
    { orgId, actor, action: 'sendWebhookTest', targetKind: 'webhook_endpoint', targetId: endpointId },
    (trx) =>
      sendToEndpoint(trx, orgId, endpointId, 'ping', {
        learner: null,
        endpoint_id: endpointId,
        message: 'Ceci est un événement de test.',
      }),
    (sent) => ({ delivery_id: sent.deliveryId }),
  );
}

const openapiDocument = loadOpenapiDocument();

/** The example openapi.yaml gives an event type, sent signed to this endpoint only, with a fresh id and date. */
export async function sendWebhookExampleEvent(db: DB, orgId: string, endpointId: string, eventType: EventType, actor: Actor) {
  const data = webhookExampleData(openapiDocument, eventType);
  if (data === undefined) throw new Error(`openapi.yaml gives no example of ${eventType}`);
  return audited(
    db,
    { orgId, actor, action: 'sendWebhookExample', targetKind: 'webhook_endpoint', targetId: endpointId },
    (trx) => sendToEndpoint(trx, orgId, endpointId, eventType, data as EventData<typeof eventType>),
    (sent) => ({ event_type: eventType, delivery_id: sent.deliveryId }),
  );
}

/** A delivered or dead delivery sent again; `replayed: false` (nothing changed) when it is still pending. */
export async function replayWebhookDelivery(db: DB, orgId: string, deliveryId: string, actor: Actor) {
  const replayed = await db.transaction().execute(async (trx) => {
    const outcome = await replayDelivery(trx, orgId, deliveryId);
    if (outcome?.replayed)
      await recordAuditEvent(trx, {
        orgId,
        actor,
        action: 'replayWebhookDelivery',
        target: { kind: 'webhook_delivery', id: deliveryId },
        outcome: 'succeeded',
        details: { endpoint_id: outcome.endpoint_id },
        requestId: actor.requestId ?? null,
        clientAddress: actor.clientAddress ?? null,
      });
    return outcome;
  });
  return replayed;
}

/**
 * Every dead delivery of an enabled endpoint created since `since`, sent again (EndpointDisabled
 * for a disabled one). Returns how many, or null when the organisation has no such endpoint.
 */
export async function recoverWebhookDeliveries(db: DB, orgId: string, endpointId: string, since: Date, actor: Actor) {
  return audited(
    db,
    { orgId, actor, action: 'recoverWebhookDeliveries', targetKind: 'webhook_endpoint', targetId: endpointId },
    async (trx) => {
      const endpoint = await findEndpoint(trx, endpointId, orgId);
      if (!endpoint) return null;
      if (!endpoint.enabled) throw new EndpointDisabled();
      return { requeued: await recoverDeadDeliveries(trx, endpointId, since) };
    },
    (recovered) => ({ since: since.toISOString(), requeued: recovered.requeued }),
  );
}
