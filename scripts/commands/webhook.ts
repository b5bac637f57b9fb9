import type { DeliveryStatus } from '../../db/tables/webhooks';
import {
  findDeliveryForOperator,
  findEndpointForOperator,
  type LoggedDelivery,
  listDeliveriesPage,
  listEndpoints,
} from '../../db/webhook-endpoints';
import { installDeliveryQueue, subscribableEventTypes } from '../../db/webhooks';
import {
  EndpointLimitReached,
  registerWebhookEndpoint,
  replayWebhookDelivery,
  resumeWebhookEndpoint,
  rotateWebhookEndpointSecret,
  sendWebhookPing,
  suspendWebhookEndpoint,
} from '../../src/webhook-endpoints';
import { checkWebhookUrl, WebhookAddressError } from '../../src/webhooks/address-guard';
import {
  type AdminCommand,
  type CommandContext,
  oneOf,
  operatorActor,
  positiveInteger,
  requiredString,
  requiredUuid,
  requireOrganisation,
  UsageError,
} from '../command';
import { count, operatorDateTime, sheet, table } from '../output';

type Endpoint = NonNullable<Awaited<ReturnType<typeof findEndpointForOperator>>>;

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
  const endpoint = await findEndpointForOperator(context.db, id);
  if (!endpoint) throw new UsageError(`Aucun point de réception ${id}.`);
  return endpoint;
}

const deliveryStatusText: Record<DeliveryStatus, string> = { pending: 'en attente', delivered: 'livrée', dead: 'abandonnée' };

/** An endpoint's state in words: active, or why and since when it is disabled. */
function endpointState(endpoint: Endpoint): string {
  if (endpoint.enabled)
    return endpoint.consecutive_failures > 0 ? `actif (${count(endpoint.consecutive_failures, 'échec')} de suite)` : 'actif';
  const why = endpoint.disabled_reason === 'failures' ? 'après trop d’échecs' : 'par un opérateur';
  return `désactivé ${why}${endpoint.disabled_at ? ` le ${operatorDateTime(endpoint.disabled_at)}` : ''}`;
}

/** One endpoint as an operator reads it (dates and times of Paris). */
function endpointSheet(endpoint: Endpoint): string {
  const previous = describeEndpoint(endpoint).previous_secret_valid_until;
  return sheet([
    ['identifiant', endpoint.id],
    ['adresse', endpoint.url],
    ['événements', endpoint.event_types.join(', ')],
    ['état', endpointState(endpoint)],
    ['ancien secret valable jusqu’au', previous ? operatorDateTime(new Date(previous)) : null],
    ['créé le', operatorDateTime(endpoint.created_at)],
  ]);
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

type Delivery = LoggedDelivery;

/** The delivery log as a table: one line per attempt, the delivery named on its first one. */
function deliveryLog(deliveries: Delivery[]): string {
  const lines = deliveries.flatMap((delivery) => {
    const attempts = delivery.attempts.length > 0 ? delivery.attempts : [null];
    return attempts.map((attempt, i) => ({ delivery, attempt, first: i === 0, number: i + 1 }));
  });
  const outcome = (delivery: Delivery) => {
    if (delivery.status === 'pending')
      return delivery.job_id === null
        ? 'en attente de la réactivation du point de réception'
        : `en attente, prochain envoi ${operatorDateTime(delivery.next_attempt_at)}`;
    if (delivery.status === 'delivered') return `livrée le ${operatorDateTime(delivery.delivered_at)}`;
    return `abandonnée le ${operatorDateTime(delivery.dead_at)}`;
  };
  return table(
    lines,
    [
      { header: 'Livraison', value: (l) => (l.first ? l.delivery.id : '') },
      { header: 'Événement', value: (l) => (l.first ? l.delivery.event_type : '') },
      { header: 'Statut', value: (l) => (l.first ? outcome(l.delivery) : '') },
      { header: 'Tentative', value: (l) => (l.attempt ? `${l.number} le ${operatorDateTime(l.attempt.attempted_at)}` : 'aucune') },
      {
        header: 'Réponse',
        value: (l) => (l.attempt ? (l.attempt.status_code === null ? 'aucune' : `HTTP ${l.attempt.status_code}`) : null),
      },
      { header: 'Durée', value: (l) => (l.attempt ? `${l.attempt.duration_ms} ms` : null), align: 'right' },
      { header: 'Erreur', value: (l) => (l.attempt?.error_code ? `${l.attempt.error_code} : ${l.attempt.error}` : l.attempt?.error) },
    ],
    '',
  );
}

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
      const organisation = await requireOrganisation(context.db, orgId);
      await installDeliveryQueue(context.db);
      // An address only development allows (http, a local one): the server that delivers must allow it too.
      const developmentOnly = await checkWebhookUrl(rawUrl, { allowInsecure: false }).then(
        () => false,
        () =>
          checkWebhookUrl(rawUrl, { allowInsecure: true }).then(
            () => true,
            () => false,
          ),
      );
      const { endpoint, secret } = await registerWebhookEndpoint(context.db, { orgId, url: rawUrl, eventTypes }, operatorActor, {
        allowInsecure: context.config.webhookAllowInsecure,
      }).catch((error: unknown) => {
        if (error instanceof WebhookAddressError)
          throw new UsageError(
            developmentOnly
              ? `Adresse refusée : ${error.message}. En développement seulement, WEBHOOK_ALLOW_INSECURE=1 accepte http et les adresses locales : donnez-le à cette commande et au serveur qui livre.`
              : `Adresse refusée : ${error.message}.`,
          );
        if (error instanceof EndpointLimitReached)
          throw new UsageError(`« ${organisation.name} » a déjà 20 points de réception : supprimez-en un avant d’en créer un autre.`);
        throw error;
      });
      return {
        json: { id: endpoint.id, secret, url: endpoint.url, events: endpoint.event_types },
        text: [
          `Point de réception créé pour « ${organisation.name} » :`,
          endpointSheet(endpoint),
          '',
          `Secret de signature : ${secret}`,
          'Notez-le maintenant : il n’est affiché qu’une fois. « webhook ping --id ID » envoie un événement de test.',
          ...(developmentOnly
            ? [
                'Adresse acceptée grâce à WEBHOOK_ALLOW_INSECURE : le serveur qui livre doit l’avoir aussi, sinon il refusera chaque livraison (« adresse refusée » dans « webhook deliveries »).',
              ]
            : []),
        ].join('\n'),
      };
    },
  },
  {
    name: 'webhook list',
    usage: '--org ID',
    description: 'Liste les points de réception d’une organisation (sans leur secret).',
    options: { org: { type: 'string' } },
    async run(context) {
      const orgId = requiredUuid(context.values, 'org');
      const organisation = await requireOrganisation(context.db, orgId);
      const endpoints = await listEndpoints(context.db, orgId);
      return {
        json: { org: orgId, endpoints: endpoints.map(describeEndpoint) },
        text: table(
          endpoints,
          [
            { header: 'Identifiant', value: (e) => e.id },
            { header: 'Adresse', value: (e) => e.url },
            { header: 'Événements', value: (e) => e.event_types.join(', ') },
            { header: 'État', value: endpointState },
            { header: 'Créé le', value: (e) => operatorDateTime(e.created_at) },
          ],
          `Aucun point de réception pour « ${organisation.name} » : créez-en un avec webhook create.`,
        ),
      };
    },
  },
  {
    name: 'webhook enable',
    usage: '--id ENDPOINT_ID',
    description: 'Réactive un point de réception (compteur d’échecs remis à zéro) ; ses livraisons en attente reprennent.',
    options: { id: { type: 'string' } },
    async run(context) {
      const id = requiredUuid(context.values, 'id');
      const found = await requireEndpoint(context, id);
      await installDeliveryQueue(context.db);
      const endpoint = (await resumeWebhookEndpoint(context.db, found.org_id, id, operatorActor))!;
      return {
        json: { ...describeEndpoint(endpoint), resumed_deliveries: endpoint.resumed_deliveries },
        text: `Point de réception réactivé ; ${count(endpoint.resumed_deliveries, 'livraison en attente reprend', 'livraisons en attente reprennent')}.\n${endpointSheet(endpoint)}`,
      };
    },
  },
  {
    name: 'webhook disable',
    usage: '--id ENDPOINT_ID',
    description: 'Désactive un point de réception : rien n’est envoyé, ses livraisons en attente sont gardées.',
    options: { id: { type: 'string' } },
    async run(context) {
      const id = requiredUuid(context.values, 'id');
      const found = await requireEndpoint(context, id);
      const endpoint = (await suspendWebhookEndpoint(context.db, found.org_id, id, operatorActor))!;
      return {
        json: describeEndpoint(endpoint),
        text: `Point de réception désactivé : rien ne lui est envoyé, ses livraisons en attente sont gardées jusqu’à « webhook enable ».\n${endpointSheet(endpoint)}`,
      };
    },
  },
  {
    name: 'webhook ping',
    usage: '--id ENDPOINT_ID',
    description: 'Envoie un événement « ping » signé à ce point de réception (visible dans son journal des livraisons).',
    options: { id: { type: 'string' } },
    async run(context) {
      const id = requiredUuid(context.values, 'id');
      const endpoint = await requireEndpoint(context, id);
      await installDeliveryQueue(context.db);
      const ping = { ...(await sendWebhookPing(context.db, endpoint.org_id, id, operatorActor))!, endpointEnabled: endpoint.enabled };
      const note = 'Point de réception désactivé : le ping partira à sa réactivation.';
      return {
        json: { endpoint: id, event_id: ping.eventId, delivery_id: ping.deliveryId, ...(ping.endpointEnabled ? {} : { note }) },
        text: [
          ping.endpointEnabled ? 'Ping envoyé : il part dans les secondes qui suivent.' : note,
          sheet([
            ['événement', ping.eventId],
            ['livraison', ping.deliveryId],
          ]),
          `Son résultat : webhook deliveries --id ${id}`,
        ].join('\n'),
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
      const status = oneOf(context.values, 'status', deliveryStatuses, false);
      const limit = positiveInteger(context.values, 'limit', 50);
      const endpoint = await requireEndpoint(context, id);
      const deliveries = (await listDeliveriesPage(context.db, endpoint.org_id, { endpointId: id, status }, null, limit)).slice(0, limit);
      const which = status ? ` (statut : ${deliveryStatusText[status]})` : '';
      return {
        json: {
          endpoint: id,
          deliveries: deliveries.map((d) => ({
            id: d.id,
            event_id: d.event_id,
            event: d.event_type,
            status: d.status,
            attempt_count: d.attempt_count,
            // None planned for a delivery set aside while its endpoint is disabled.
            next_attempt_at: d.status === 'pending' && d.job_id !== null ? d.next_attempt_at.toISOString() : null,
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
              error_code: a.error_code,
              response_excerpt: a.response_excerpt,
            })),
          })),
        },
        text:
          deliveries.length === 0
            ? `Aucune livraison${which} pour ce point de réception.`
            : `${count(deliveries.length, 'livraison')}${which}, les plus récentes d’abord (heures de Paris) :\n${deliveryLog(deliveries)}`,
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
      const delivery = await findDeliveryForOperator(context.db, id);
      if (!delivery) throw new UsageError(`Aucune livraison ${id}.`);
      if (delivery.status === 'pending') throw new UsageError(`La livraison ${id} est déjà en attente d’envoi.`);
      await installDeliveryQueue(context.db);
      await replayWebhookDelivery(context.db, delivery.org_id, id, operatorActor);
      return {
        json: { id, endpoint: delivery.endpoint_id, status: 'pending' },
        text: `Livraison ${id} (${deliveryStatusText[delivery.status]}) renvoyée : même identifiant, même corps, six nouvelles tentatives. Son résultat : webhook deliveries --id ${delivery.endpoint_id}`,
      };
    },
  },
  {
    name: 'webhook rotate-secret',
    usage: '--id ENDPOINT_ID',
    description: 'Nouveau secret (affiché une seule fois) ; l’ancien signe encore pendant 24 heures (deux v1= dans la signature).',
    options: { id: { type: 'string' } },
    async run(context) {
      const id = requiredUuid(context.values, 'id');
      const found = await requireEndpoint(context, id);
      const { endpoint, secret } = (await rotateWebhookEndpointSecret(context.db, found.org_id, id, operatorActor))!;
      const previousUntil = endpoint.previous_secret_expires_at!;
      return {
        json: { id, secret, previous_secret_valid_until: previousUntil.toISOString() },
        text: [
          `Nouveau secret de signature : ${secret}`,
          'Notez-le maintenant : il n’est affiché qu’une fois.',
          `L’ancien signe encore jusqu’au ${operatorDateTime(previousUntil)} (heure de Paris) : chaque envoi porte alors deux v1=, un par secret.`,
        ].join('\n'),
      };
    },
  },
];
