import { findOrganisation } from '../../db/organisations';
import type { DeliveryStatus } from '../../db/tables/webhooks';
import {
  createEndpoint,
  disableEndpoint,
  enableEndpoint,
  findDelivery,
  findEndpoint,
  installDeliveryQueue,
  listDeliveries,
  listEndpoints,
  queuePing,
  replayDelivery,
  rotateEndpointSecret,
  subscribableEventTypes,
} from '../../db/webhooks';
import { checkWebhookUrl, WebhookAddressError } from '../../src/webhooks/address-guard';
import { generateWebhookSecret } from '../../src/webhooks/signature';
import { type AdminCommand, type CommandContext, positiveInteger, requiredString, requiredUuid, UsageError } from '../command';

type Endpoint = NonNullable<Awaited<ReturnType<typeof findEndpoint>>>;

/** An endpoint as the operator sees it: never its secret. */
function describeEndpoint(endpoint: Endpoint) {
  return {
    id: endpoint.id,
    org: endpoint.org_id,
    url: endpoint.url,
    events: endpoint.event_types,
    enabled: endpoint.enabled,
    consecutive_failures: endpoint.consecutive_failures,
    disabled_at: endpoint.disabled_at?.toISOString() ?? null,
    disabled_reason: endpoint.disabled_reason,
    previous_secret_valid_until:
      endpoint.previous_secret_expires_at && endpoint.previous_secret_expires_at > new Date()
        ? endpoint.previous_secret_expires_at.toISOString()
        : null,
    created_at: endpoint.created_at.toISOString(),
  };
}

async function requireEndpoint(context: CommandContext, id: string): Promise<Endpoint> {
  const endpoint = await findEndpoint(context.db, id);
  if (!endpoint) throw new UsageError(`Aucun point de réception ${id}.`);
  return endpoint;
}

function eventTypesOption(value: string | boolean | undefined): string[] {
  if (value === undefined) return [...subscribableEventTypes];
  const types = String(value)
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  if (types.length === 0) throw new UsageError('--events : indiquez au moins un type d’événement.');
  for (const type of types) {
    if (type === 'ping')
      throw new UsageError('--events : « ping » ne s’abonne pas, « webhook ping » l’envoie au point de réception testé.');
    if (!(subscribableEventTypes as readonly string[]).includes(type)) {
      throw new UsageError(`--events : type inconnu « ${type} » (types : ${subscribableEventTypes.join(', ')}).`);
    }
  }
  return [...new Set(types)];
}

const deliveryStatuses: DeliveryStatus[] = ['pending', 'delivered', 'dead'];

export const commands: AdminCommand[] = [
  {
    name: 'webhook create',
    usage: '--org ID --url URL [--events type1,type2]',
    description:
      'Crée un point de réception de webhooks (https, adresse publique ; par défaut tous les types). Le secret whsec_ n’est affiché qu’une fois.',
    options: { org: { type: 'string' }, url: { type: 'string' }, events: { type: 'string' } },
    async run(context) {
      const orgId = requiredUuid(context.values, 'org');
      const rawUrl = requiredString(context.values, 'url');
      const eventTypes = eventTypesOption(context.values.events);
      if (!(await findOrganisation(context.db, orgId))) throw new UsageError(`Aucune organisation ${orgId}.`);
      let url: URL;
      try {
        url = await checkWebhookUrl(rawUrl, { allowInsecure: context.config.webhookAllowInsecure });
      } catch (error) {
        if (error instanceof WebhookAddressError) throw new UsageError(`Adresse refusée : ${error.message}.`);
        throw error;
      }
      await installDeliveryQueue(context.db);
      const secret = generateWebhookSecret();
      const endpoint = await createEndpoint(context.db, { orgId, url: url.href, secret, eventTypes });
      return { id: endpoint.id, secret, url: endpoint.url, events: endpoint.event_types };
    },
  },
  {
    name: 'webhook list',
    usage: '--org ID',
    description: 'Liste les points de réception d’une organisation (sans leur secret).',
    options: { org: { type: 'string' } },
    async run(context) {
      const orgId = requiredUuid(context.values, 'org');
      if (!(await findOrganisation(context.db, orgId))) throw new UsageError(`Aucune organisation ${orgId}.`);
      return { org: orgId, endpoints: (await listEndpoints(context.db, orgId)).map(describeEndpoint) };
    },
  },
  {
    name: 'webhook enable',
    usage: '--id ENDPOINT_ID',
    description: 'Réactive un point de réception (compteur d’échecs remis à zéro) ; ses livraisons en attente reprennent.',
    options: { id: { type: 'string' } },
    async run(context) {
      const id = requiredUuid(context.values, 'id');
      await requireEndpoint(context, id);
      await installDeliveryQueue(context.db);
      const endpoint = (await enableEndpoint(context.db, id))!;
      return { ...describeEndpoint(endpoint), resumed_deliveries: endpoint.resumed_deliveries };
    },
  },
  {
    name: 'webhook disable',
    usage: '--id ENDPOINT_ID',
    description: 'Désactive un point de réception : rien n’est envoyé, ses livraisons en attente sont gardées.',
    options: { id: { type: 'string' } },
    async run(context) {
      const id = requiredUuid(context.values, 'id');
      const endpoint = await disableEndpoint(context.db, id);
      if (!endpoint) throw new UsageError(`Aucun point de réception ${id}.`);
      return describeEndpoint(endpoint);
    },
  },
  {
    name: 'webhook ping',
    usage: '--id ENDPOINT_ID',
    description: 'Envoie un événement « ping » signé à ce point de réception (visible dans son journal des livraisons).',
    options: { id: { type: 'string' } },
    async run(context) {
      const id = requiredUuid(context.values, 'id');
      await requireEndpoint(context, id);
      await installDeliveryQueue(context.db);
      const ping = (await queuePing(context.db, id))!;
      return {
        endpoint: id,
        event_id: ping.eventId,
        delivery_id: ping.deliveryId,
        ...(ping.endpointEnabled ? {} : { note: 'Point de réception désactivé : le ping partira à sa réactivation.' }),
      };
    },
  },
  {
    name: 'webhook deliveries',
    usage: '--id ENDPOINT_ID [--status pending|delivered|dead] [--limit N]',
    description: 'Journal des livraisons d’un point de réception, les plus récentes d’abord, avec chaque tentative.',
    options: { id: { type: 'string' }, status: { type: 'string' }, limit: { type: 'string' } },
    async run(context) {
      const id = requiredUuid(context.values, 'id');
      const status = context.values.status;
      if (status !== undefined && !deliveryStatuses.includes(status as DeliveryStatus)) {
        throw new UsageError(`--status doit valoir ${deliveryStatuses.join(', ')} (reçu « ${String(status)} »).`);
      }
      const limit = positiveInteger(context.values, 'limit', 50);
      await requireEndpoint(context, id);
      const deliveries = await listDeliveries(context.db, id, { status: status as DeliveryStatus | undefined, limit });
      return {
        endpoint: id,
        deliveries: deliveries.map((d) => ({
          id: d.id,
          event_id: d.event_id,
          event: d.event_type,
          status: d.status,
          attempt_count: d.attempt_count,
          next_attempt_at: d.status === 'pending' ? d.next_attempt_at.toISOString() : null,
          created_at: d.created_at.toISOString(),
          delivered_at: d.delivered_at?.toISOString() ?? null,
          dead_at: d.dead_at?.toISOString() ?? null,
          replays: d.replay_count,
          attempts: d.attempts.map((a) => ({
            at: a.attempted_at.toISOString(),
            status_code: a.status_code,
            duration_ms: a.duration_ms,
            succeeded: a.succeeded,
            error: a.error,
            response_excerpt: a.response_excerpt,
          })),
        })),
      };
    },
  },
  {
    name: 'webhook replay',
    usage: '--delivery DELIVERY_ID',
    description: 'Renvoie une livraison abandonnée (dead) ou livrée : même identifiant, même corps, six nouvelles tentatives.',
    options: { delivery: { type: 'string' } },
    async run(context) {
      const id = requiredUuid(context.values, 'delivery');
      const delivery = await findDelivery(context.db, id);
      if (!delivery) throw new UsageError(`Aucune livraison ${id}.`);
      if (delivery.status === 'pending') throw new UsageError(`La livraison ${id} est déjà en attente d’envoi.`);
      await installDeliveryQueue(context.db);
      await replayDelivery(context.db, id);
      return { id, endpoint: delivery.endpoint_id, status: 'pending' };
    },
  },
  {
    name: 'webhook rotate-secret',
    usage: '--id ENDPOINT_ID',
    description: 'Nouveau secret (affiché une seule fois) ; l’ancien signe encore pendant 24 heures (deux v1= dans la signature).',
    options: { id: { type: 'string' } },
    async run(context) {
      const id = requiredUuid(context.values, 'id');
      const secret = generateWebhookSecret();
      const endpoint = await rotateEndpointSecret(context.db, id, secret);
      if (!endpoint) throw new UsageError(`Aucun point de réception ${id}.`);
      return { id, secret, previous_secret_valid_until: endpoint.previous_secret_expires_at!.toISOString() };
    },
  },
];
