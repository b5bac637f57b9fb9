import type { DB } from '../db/connection';
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
import { type Actor, auditedChange, recordChange } from './audit';
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
    await recordChange(trx, actor, {
      orgId: request.orgId,
      action: 'createWebhookEndpoint',
      target: { kind: 'webhook_endpoint', id: endpoint.id },
      details: { url: endpoint.url, event_types: endpoint.event_types },
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
  return auditedChange(
    db,
    actor,
    { orgId, action: 'updateWebhookEndpoint', target: { kind: 'webhook_endpoint', id: endpointId } },
    (trx) => updateEndpoint(trx, orgId, endpointId, { url, eventTypes: change.eventTypes }),
    (endpoint) => ({ url: endpoint.url, event_types: endpoint.event_types }),
  );
}

/** Deletes an endpoint with its delivery log; the audit line keeps its address. */
export async function removeWebhookEndpoint(db: DB, orgId: string, endpointId: string, actor: Actor) {
  return auditedChange(
    db,
    actor,
    { orgId, action: 'deleteWebhookEndpoint', target: { kind: 'webhook_endpoint', id: endpointId } },
    (trx) => deleteEndpoint(trx, orgId, endpointId),
    (endpoint) => ({ url: endpoint.url }),
  );
}

/** Enables an endpoint again and resumes its pending deliveries. */
export async function resumeWebhookEndpoint(db: DB, orgId: string, endpointId: string, actor: Actor) {
  return auditedChange(
    db,
    actor,
    { orgId, action: 'enableWebhookEndpoint', target: { kind: 'webhook_endpoint', id: endpointId } },
    (trx) => enableEndpoint(trx, orgId, endpointId),
    (enabled) => ({ resumed_deliveries: enabled.resumed_deliveries }),
  );
}

/** Disables an endpoint (the operator's command): nothing is attempted, its deliveries wait. */
export async function suspendWebhookEndpoint(db: DB, orgId: string, endpointId: string, actor: Actor) {
  return auditedChange(
    db,
    actor,
    { orgId, action: 'disableWebhookEndpoint', target: { kind: 'webhook_endpoint', id: endpointId } },
    (trx) => disableEndpoint(trx, orgId, endpointId),
  );
}

/** A new signing secret, returned once; the previous one keeps signing for 24 hours. */
export async function rotateWebhookEndpointSecret(db: DB, orgId: string, endpointId: string, actor: Actor) {
  const secret = generateWebhookSecret();
  const endpoint = await auditedChange(
    db,
    actor,
    { orgId, action: 'rotateWebhookSecret', target: { kind: 'webhook_endpoint', id: endpointId } },
    (trx) => rotateEndpointSecret(trx, orgId, endpointId, secret),
  );
  return endpoint === null ? null : { endpoint, secret };
}

/** The test button: a signed `ping` to this endpoint only. */
export async function sendWebhookPing(db: DB, orgId: string, endpointId: string, actor: Actor) {
  return auditedChange(
    db,
    actor,
    { orgId, action: 'sendWebhookTest', target: { kind: 'webhook_endpoint', id: endpointId } },
    (trx) =>
      sendToEndpoint(trx, orgId, endpointId, 'ping', {
        learner: null,
        endpoint_id: endpointId,
        message: 'Ceci est un événement de test.',
      }),
    (sent) => ({ delivery_id: sent.deliveryId }),
  );
}

/**
 * An example of an event type (its data as openapi.yaml gives it, `webhookExampleData`), sent signed
 * to this endpoint only, with a fresh id and date.
 */
export async function sendWebhookExampleEvent<T extends EventType>(
  db: DB,
  orgId: string,
  endpointId: string,
  example: { eventType: T; data: EventData<T> },
  actor: Actor,
) {
  const { eventType, data } = example;
  if (data === undefined) throw new Error(`openapi.yaml gives no example of ${eventType}`);
  return auditedChange(
    db,
    actor,
    { orgId, action: 'sendWebhookExample', target: { kind: 'webhook_endpoint', id: endpointId } },
    (trx) => sendToEndpoint(trx, orgId, endpointId, eventType, data),
    (sent) => ({ event_type: eventType, delivery_id: sent.deliveryId }),
  );
}

/** A delivered or dead delivery sent again; `replayed: false` (nothing changed) when it is still pending. */
export async function replayWebhookDelivery(db: DB, orgId: string, deliveryId: string, actor: Actor) {
  return db.transaction().execute(async (trx) => {
    const outcome = await replayDelivery(trx, orgId, deliveryId);
    if (outcome?.replayed)
      await recordChange(trx, actor, {
        orgId,
        action: 'replayWebhookDelivery',
        target: { kind: 'webhook_delivery', id: deliveryId },
        details: { endpoint_id: outcome.endpoint_id },
      });
    return outcome;
  });
}

/**
 * Every dead delivery of an enabled endpoint created since `since`, sent again (EndpointDisabled
 * for a disabled one). Returns how many, or null when the organisation has no such endpoint.
 */
export async function recoverWebhookDeliveries(db: DB, orgId: string, endpointId: string, since: Date, actor: Actor) {
  return auditedChange(
    db,
    actor,
    { orgId, action: 'recoverWebhookDeliveries', target: { kind: 'webhook_endpoint', id: endpointId } },
    async (trx) => {
      const endpoint = await findEndpoint(trx, orgId, endpointId);
      if (!endpoint) return null;
      if (!endpoint.enabled) throw new EndpointDisabled();
      return { requeued: await recoverDeadDeliveries(trx, orgId, endpointId, since) };
    },
    (recovered) => ({ since: since.toISOString(), requeued: recovered.requeued }),
  );
}
