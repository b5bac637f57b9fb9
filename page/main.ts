import createClient from 'openapi-fetch';
import type { components, paths } from '../codegen/management';

/*
 * The page « API et intégrations »: everything it shows and does goes through the management API
 * (/manage/v1) with the session's cookie, and every change carries the session's anti-CSRF token.
 * The server decides what a session may do: a read-only session sees every button, and each one
 * shows the server's refusal. Text reaches the page through textContent only.
 */

type Schemas = components['schemas'];
type ApiError = Schemas['ManagementError'];

const client = createClient<paths>({ baseUrl: '/manage/v1', credentials: 'same-origin' });
let csrfToken = '';
client.use({
  onRequest({ request }) {
    if (request.method !== 'GET') request.headers.set('X-CSRF-Token', csrfToken);
    return request;
  },
});

let orgId = '';
let eventTypes: Schemas['WebhookEventTypeList']['data'] = [];
let endpoints: Schemas['WebhookEndpoint'][] = [];

// ---------------------------------------------------------------------------------------------
// DOM helpers

type Child = Node | string | null | undefined | false;

function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | boolean | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === undefined) continue;
    element.setAttribute(name, value === true ? '' : value);
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) element.append(child);
  return element;
}

function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  return document.getElementById(id) as T;
}

function button(
  label: string,
  onClick: () => Promise<void> | void,
  kind: 'primary' | 'secondary' | 'danger' = 'secondary',
  describedBy?: string,
) {
  const element = h('button', { type: 'button', class: kind === 'primary' ? undefined : kind, 'aria-describedby': describedBy }, label);
  element.addEventListener('click', () => void onClick());
  return element;
}

function table(caption: string, headers: string[], rows: Child[][]): HTMLElement {
  // A region that may scroll sideways on a narrow screen: it takes the focus, so a keyboard scrolls it.
  return h(
    'div',
    { class: 'table-scroll', role: 'region', 'aria-label': caption, tabindex: '0' },
    h(
      'table',
      {},
      h('caption', {}, caption),
      h('thead', {}, h('tr', {}, ...headers.map((header) => h('th', { scope: 'col' }, header)))),
      h('tbody', {}, ...rows.map((cells) => h('tr', {}, ...cells.map((cell) => h('td', {}, cell))))),
    ),
  );
}

const dateTime = new Intl.DateTimeFormat('fr-FR', { timeZone: 'Europe/Paris', dateStyle: 'short', timeStyle: 'medium' });
const day = new Intl.DateTimeFormat('fr-FR', { timeZone: 'Europe/Paris', dateStyle: 'long' });
const when = (iso: string | null) => (iso === null ? '—' : dateTime.format(new Date(iso)));
const onDay = (date: string | null) => (date === null ? '—' : day.format(new Date(`${date}T12:00:00Z`)));

function notify(message: string, kind: 'info' | 'error' = 'info'): void {
  const notice = byId('notice');
  notice.className = kind === 'error' ? 'notice error' : 'notice';
  notice.textContent = message;
}

/** A call's data, or null after showing the server's French refusal. */
function answered<T>(result: { data?: T; error?: unknown; response: Response }): T | null {
  if (result.error !== undefined || !result.response.ok) {
    const error = result.error as Partial<ApiError> | undefined;
    notify(error?.error ?? `Erreur ${result.response.status}.`, 'error');
    return null;
  }
  return (result.data ?? null) as T | null;
}

/** A secret shown once, with its copy button and its warning. */
function showSecretOnce(containerId: string, title: string, secret: string): void {
  const container = byId(containerId);
  const value = h('code', { id: `${containerId}-valeur` }, secret);
  const copy = button('Copier', async () => {
    await navigator.clipboard.writeText(secret).then(
      () => notify('Copié dans le presse-papiers.'),
      () => notify('Copie impossible : sélectionnez le texte et copiez-le.', 'error'),
    );
  });
  container.replaceChildren(
    h('h3', {}, title),
    h('p', {}, h('strong', {}, 'Copiez-la maintenant : elle ne sera plus jamais affichée.'), ' Conservez-la comme un mot de passe.'),
    value,
    h(
      'div',
      { class: 'actions' },
      copy,
      button('J’ai copié, masquer', () => container.replaceChildren(), 'secondary'),
    ),
  );
  container.hidden = false;
  copy.focus();
}

// ---------------------------------------------------------------------------------------------
// Clés API

const stateText: Record<Schemas['ApiKeyState'], string> = { active: 'Active', expired: 'Expirée', revoked: 'Révoquée' };

async function renderKeys(): Promise<void> {
  const page = answered(
    await client.GET('/organisations/{org_id}/api-keys', { params: { path: { org_id: orgId }, query: { limit: 100 } } }),
  );
  if (!page) return;
  const rows = page.data.map((key) => [
    key.label ?? '—',
    h('code', {}, `${key.prefix}…`),
    key.scopes.includes('write') ? 'Lecture et inscription' : 'Lecture seule',
    when(key.created_at),
    onDay(key.expires_on),
    when(key.last_used_at),
    h('span', { class: key.state === 'active' ? 'state-on' : 'state-off' }, stateText[key.state]),
    key.state === 'revoked' ? '' : button(`Révoquer`, () => revokeKey(key), 'danger'),
  ]);
  byId('keys').replaceChildren(
    page.data.length === 0
      ? h('p', {}, 'Aucune clé pour l’instant.')
      : table(
          'Clés de l’organisation',
          ['Nom', 'Préfixe', 'Droits', 'Créée le', 'Dernier jour', 'Dernière utilisation', 'État', 'Action'],
          rows,
        ),
  );
}

async function revokeKey(key: Schemas['ApiKey']): Promise<void> {
  if (!window.confirm(`Révoquer la clé « ${key.label ?? key.prefix} » ? Les outils qui l’utilisent recevront une erreur 401.`)) return;
  const revoked = answered(
    await client.POST('/organisations/{org_id}/api-keys/{key_id}/revoke', { params: { path: { org_id: orgId, key_id: key.id } } }),
  );
  if (!revoked) return;
  notify(`Clé « ${key.label ?? key.prefix} » révoquée.`);
  await Promise.all([renderKeys(), renderAudit()]);
}

async function createKey(form: HTMLFormElement): Promise<void> {
  const data = new FormData(form);
  const expires = String(data.get('expires_on') ?? '');
  const created = answered(
    await client.POST('/organisations/{org_id}/api-keys', {
      params: { path: { org_id: orgId } },
      body: {
        label: String(data.get('label') ?? '').trim(),
        scopes: data.get('scope') === 'write' ? ['read', 'write'] : ['read'],
        expires_on: expires === '' ? null : expires,
      },
    }),
  );
  if (!created) return;
  form.reset();
  showSecretOnce('key-created', `Clé « ${created.api_key.label} » créée`, created.key);
  await Promise.all([renderKeys(), renderAudit()]);
}

// ---------------------------------------------------------------------------------------------
// Webhooks

function typeCheckboxes(name: string, checked: readonly string[]): HTMLElement[] {
  return eventTypes.map((type) =>
    h(
      'label',
      {},
      h('input', { type: 'checkbox', name, value: type.event_type, checked: checked.includes(type.event_type) }),
      ` ${type.summary} `,
      h('code', {}, type.event_type),
      h('span', { class: 'hint' }, ` — ${type.description}`),
    ),
  );
}

function endpointState(endpoint: Schemas['WebhookEndpoint']): HTMLElement {
  if (endpoint.state === 'active')
    return h(
      'span',
      { class: 'state-on' },
      endpoint.consecutive_failures > 0 ? `Actif (${endpoint.consecutive_failures} échec(s) de suite)` : 'Actif',
    );
  const why = endpoint.disabled_reason === 'failures' ? 'après trop d’échecs de suite' : 'par un opérateur';
  return h('span', { class: 'state-off' }, `Désactivé ${why} depuis le ${when(endpoint.disabled_at)}`);
}

async function renderEndpoints(): Promise<void> {
  const page = answered(
    await client.GET('/organisations/{org_id}/webhook-endpoints', { params: { path: { org_id: orgId }, query: { limit: 100 } } }),
  );
  if (!page) return;
  endpoints = page.data;
  const cards = endpoints.map((endpoint) => {
    const exampleSelect = h(
      'select',
      { id: `exemple-${endpoint.id}`, 'aria-label': `Type de l’exemple pour ${endpoint.url}` },
      ...eventTypes.map((type) => h('option', { value: type.event_type }, type.summary)),
    );
    const stateId = `etat-${endpoint.id}`;
    return h(
      'article',
      { class: 'card', 'aria-label': endpoint.url },
      h('h3', {}, endpoint.url),
      h('p', { id: stateId }, endpointState(endpoint)),
      h('p', {}, 'Événements : ', endpoint.event_types.join(', ')),
      endpoint.previous_secret_expires_at
        ? h('p', { class: 'muted' }, `L’ancien secret signe encore jusqu’au ${when(endpoint.previous_secret_expires_at)}.`)
        : null,
      h(
        'div',
        { class: 'actions' },
        endpoint.state === 'disabled' ? button('Réactiver', () => enableEndpoint(endpoint), 'primary', stateId) : null,
        button('Envoyer un test', () => sendTest(endpoint)),
        exampleSelect,
        button('Envoyer un exemple', () => sendExample(endpoint, exampleSelect.value)),
        button('Modifier', () => editEndpoint(endpoint)),
        button('Changer le secret', () => rotateSecret(endpoint)),
        button('Supprimer', () => deleteEndpoint(endpoint), 'danger'),
      ),
      h('div', { id: `modifier-${endpoint.id}` }),
    );
  });
  byId('endpoints').replaceChildren(...(cards.length === 0 ? [h('p', {}, 'Aucun point de réception pour l’instant.')] : cards));
  fillEndpointSelects();
}

function fillEndpointSelects(): void {
  const filter = byId<HTMLSelectElement>('filter-endpoint');
  const current = filter.value;
  filter.replaceChildren(h('option', { value: '' }, 'Tous'), ...endpoints.map((e) => h('option', { value: e.id }, e.url)));
  filter.value = endpoints.some((e) => e.id === current) ? current : '';
  byId('recover-endpoint').replaceChildren(...endpoints.map((e) => h('option', { value: e.id }, e.url)));
}

const endpointPath = (endpoint: Schemas['WebhookEndpoint']) => ({ path: { org_id: orgId, endpoint_id: endpoint.id } });

async function afterEndpointChange(message: string): Promise<void> {
  notify(message);
  await Promise.all([renderEndpoints(), renderDeliveries(), renderAudit()]);
}

async function createEndpoint(form: HTMLFormElement): Promise<void> {
  const data = new FormData(form);
  const types = data.getAll('event_types').map(String) as Schemas['WebhookEventType'][];
  const created = answered(
    await client.POST('/organisations/{org_id}/webhook-endpoints', {
      params: { path: { org_id: orgId } },
      body: { url: String(data.get('url') ?? '').trim(), ...(types.length > 0 ? { event_types: types } : {}) },
    }),
  );
  if (!created) return;
  form.reset();
  showSecretOnce('endpoint-created', `Secret de signature de ${created.endpoint.url}`, created.secret);
  await Promise.all([renderEndpoints(), renderAudit()]);
}

async function enableEndpoint(endpoint: Schemas['WebhookEndpoint']): Promise<void> {
  const enabled = answered(
    await client.POST('/organisations/{org_id}/webhook-endpoints/{endpoint_id}/enable', { params: endpointPath(endpoint) }),
  );
  if (enabled) await afterEndpointChange(`Point de réception réactivé : ${enabled.resumed_deliveries} livraison(s) en attente repartent.`);
}

async function sendTest(endpoint: Schemas['WebhookEndpoint']): Promise<void> {
  const sent = answered(
    await client.POST('/organisations/{org_id}/webhook-endpoints/{endpoint_id}/test', { params: endpointPath(endpoint) }),
  );
  if (sent) await afterEndpointChange(`Test envoyé à ${endpoint.url} : son résultat arrive dans le journal des livraisons.`);
}

async function sendExample(endpoint: Schemas['WebhookEndpoint'], eventType: string): Promise<void> {
  const sent = answered(
    await client.POST('/organisations/{org_id}/webhook-endpoints/{endpoint_id}/example', {
      params: endpointPath(endpoint),
      body: { event_type: eventType as Schemas['WebhookEventType'] },
    }),
  );
  if (sent) await afterEndpointChange(`Exemple « ${eventType} » envoyé à ${endpoint.url}.`);
}

async function rotateSecret(endpoint: Schemas['WebhookEndpoint']): Promise<void> {
  if (!window.confirm(`Changer le secret de ${endpoint.url} ? L’ancien signera encore pendant 24 heures.`)) return;
  const rotated = answered(
    await client.POST('/organisations/{org_id}/webhook-endpoints/{endpoint_id}/rotate-secret', { params: endpointPath(endpoint) }),
  );
  if (!rotated) return;
  showSecretOnce('endpoint-created', `Nouveau secret de ${endpoint.url}`, rotated.secret);
  await Promise.all([renderEndpoints(), renderAudit()]);
}

async function deleteEndpoint(endpoint: Schemas['WebhookEndpoint']): Promise<void> {
  if (!window.confirm(`Supprimer ${endpoint.url} et son journal de livraisons ?`)) return;
  const result = await client.DELETE('/organisations/{org_id}/webhook-endpoints/{endpoint_id}', { params: endpointPath(endpoint) });
  if (answered(result) === null && !result.response.ok) return;
  await afterEndpointChange(`Point de réception ${endpoint.url} supprimé.`);
}

function editEndpoint(endpoint: Schemas['WebhookEndpoint']): void {
  const container = byId(`modifier-${endpoint.id}`);
  const urlId = `url-${endpoint.id}`;
  const form = h(
    'form',
    { class: 'panel' },
    h('h4', {}, `Modifier ${endpoint.url}`),
    h(
      'div',
      { class: 'field' },
      h('label', { for: urlId }, 'Adresse (https)'),
      h('input', { id: urlId, name: 'url', type: 'url', value: endpoint.url, required: true }),
    ),
    h('fieldset', { class: 'field' }, h('legend', {}, 'Événements reçus'), ...typeCheckboxes('event_types', endpoint.event_types)),
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit' }, 'Enregistrer'),
      button('Annuler', () => container.replaceChildren()),
    ),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void (async () => {
      const data = new FormData(form);
      const updated = answered(
        await client.PATCH('/organisations/{org_id}/webhook-endpoints/{endpoint_id}', {
          params: endpointPath(endpoint),
          body: {
            url: String(data.get('url') ?? '').trim(),
            event_types: data.getAll('event_types').map(String) as Schemas['WebhookEventType'][],
          },
        }),
      );
      if (updated) await afterEndpointChange(`Point de réception ${updated.url} modifié.`);
    })();
  });
  container.replaceChildren(form);
  byId(urlId).focus();
}

// ---------------------------------------------------------------------------------------------
// Journal des livraisons

const deliveryStatusText: Record<Schemas['WebhookDeliveryStatus'], string> = {
  pending: 'En attente',
  delivered: 'Livrée',
  dead: 'Abandonnée',
};

async function renderDeliveries(): Promise<void> {
  const filters = new FormData(byId<HTMLFormElement>('delivery-filters'));
  const pick = (name: string) => (String(filters.get(name) ?? '') === '' ? undefined : String(filters.get(name)));
  const page = answered(
    await client.GET('/organisations/{org_id}/webhook-deliveries', {
      params: {
        path: { org_id: orgId },
        query: {
          endpoint_id: pick('endpoint_id'),
          status: pick('status') as Schemas['WebhookDeliveryStatus'] | undefined,
          event_type: pick('event_type') as Schemas['WebhookDeliveryEventType'] | undefined,
          limit: 50,
        },
      },
    }),
  );
  if (!page) return;
  const urlOf = (id: string) => endpoints.find((endpoint) => endpoint.id === id)?.url ?? id;
  const rows = page.data.map((delivery) => [
    when(delivery.created_at),
    h('code', {}, delivery.event_type),
    urlOf(delivery.endpoint_id),
    h(
      'span',
      { class: delivery.status === 'dead' ? 'state-off' : delivery.status === 'delivered' ? 'state-on' : undefined },
      deliveryStatusText[delivery.status],
      delivery.status === 'pending'
        ? ` (prochain envoi : ${delivery.next_attempt_at ? when(delivery.next_attempt_at) : 'à la réactivation'})`
        : '',
    ),
    h(
      'details',
      {},
      h('summary', {}, `${delivery.attempt_total} tentative(s)`),
      delivery.attempts.length === 0
        ? h('p', {}, 'Aucune tentative pour l’instant.')
        : table(
            'Tentatives',
            ['Heure', 'Statut HTTP', 'Durée', 'Erreur', 'Réponse'],
            delivery.attempts.map((attempt) => [
              when(attempt.attempted_at),
              attempt.status_code === null ? 'aucune réponse' : String(attempt.status_code),
              `${attempt.duration_ms} ms`,
              attempt.error_code === null
                ? '—'
                : h(
                    'span',
                    {},
                    h('a', { href: `/manage/v1/docs/errors#webhook-${attempt.error_code}` }, h('code', {}, attempt.error_code)),
                    ` ${attempt.error ?? ''}`,
                  ),
              attempt.response_excerpt ?? '—',
            ]),
          ),
      h('p', {}, 'Contenu envoyé :'),
      h('pre', {}, prettyJson(delivery.payload)),
    ),
    delivery.status === 'pending' ? '' : button('Renvoyer', () => replayDelivery(delivery.id)),
  ]);
  byId('deliveries').replaceChildren(
    page.data.length === 0
      ? h('p', {}, 'Aucune livraison pour ces filtres.')
      : table('Livraisons, les plus récentes d’abord', ['Créée le', 'Événement', 'Point de réception', 'Statut', 'Détail', 'Action'], rows),
  );
}

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

async function replayDelivery(deliveryId: string): Promise<void> {
  const replayed = answered(
    await client.POST('/organisations/{org_id}/webhook-deliveries/{delivery_id}/replay', {
      params: { path: { org_id: orgId, delivery_id: deliveryId } },
    }),
  );
  if (replayed) await afterEndpointChange('Livraison renvoyée : même identifiant, même contenu.');
}

async function recoverDeliveries(form: HTMLFormElement): Promise<void> {
  const data = new FormData(form);
  const endpoint = endpoints.find((e) => e.id === String(data.get('endpoint_id')));
  if (!endpoint) return notify('Choisissez un point de réception.', 'error');
  const since = new Date(String(data.get('since'))).toISOString();
  const recovered = answered(
    await client.POST('/organisations/{org_id}/webhook-endpoints/{endpoint_id}/recover', {
      params: endpointPath(endpoint),
      body: { since },
    }),
  );
  if (recovered) await afterEndpointChange(`${recovered.requeued} livraison(s) abandonnée(s) renvoyée(s).`);
}

// ---------------------------------------------------------------------------------------------
// Vue d'ensemble et journal d'audit

async function renderOverview(): Promise<void> {
  const [overview, usage] = await Promise.all([
    client.GET('/organisations/{org_id}/overview', { params: { path: { org_id: orgId } } }).then(answered),
    client.GET('/organisations/{org_id}/api-usage', { params: { path: { org_id: orgId }, query: { days: 30 } } }).then(answered),
  ]);
  if (!overview || !usage) return;
  const licences = (['standard', 'tutorat'] as const).map((type) => [
    type === 'standard' ? 'Standard' : 'Tutorat',
    String(overview.licences[type].total),
    String(overview.licences[type].used),
    String(overview.licences[type].available),
  ]);
  const total = (key: Schemas['KeyUsage'], field: 'accepted' | 'rate_limited' | 'refused') =>
    key.days.reduce((sum, d) => sum + d[field], 0);
  const typeName = (type: string) => eventTypes.find((t) => t.event_type === type)?.summary ?? type;
  byId('overview').replaceChildren(
    h(
      'p',
      {},
      `${overview.learners.total} apprenant(s), dont ${overview.learners.active} actif(s). Clés : ${overview.api_keys.active} active(s), ${overview.api_keys.expired} expirée(s), ${overview.api_keys.revoked} révoquée(s). Points de réception : ${overview.webhook_endpoints.active} actif(s), ${overview.webhook_endpoints.disabled} désactivé(s).`,
    ),
    table('Licences', ['Type', 'Total', 'Utilisées', 'Disponibles'], licences),
    table(
      `Requêtes par clé, du ${onDay(usage.from)} au ${onDay(usage.to)}`,
      ['Clé', 'État', 'Acceptées', 'Refusées (limite de débit)', 'Refusées (clé révoquée ou expirée)'],
      usage.keys.map((key) => [
        `${key.label ?? '—'} (${key.prefix}…)`,
        stateText[key.state],
        String(total(key, 'accepted')),
        String(total(key, 'rate_limited')),
        String(total(key, 'refused')),
      ]),
    ),
    overview.events_last_30_days.length === 0
      ? h('p', {}, 'Aucun événement ces 30 derniers jours.')
      : table(
          'Événements des 30 derniers jours',
          ['Événement', 'Nombre'],
          overview.events_last_30_days.map((row) => [`${typeName(row.event_type)} (${row.event_type})`, String(row.count)]),
        ),
  );
}

const actionText: Record<string, string> = {
  openPortalSession: 'Ouverture de la page',
  endPortalSession: 'Déconnexion',
  createPortalLink: 'Lien vers la page créé',
  revokePortalSessions: 'Sessions fermées',
  createApiKey: 'Clé créée',
  revokeApiKey: 'Clé révoquée',
  createWebhookEndpoint: 'Point de réception ajouté',
  updateWebhookEndpoint: 'Point de réception modifié',
  deleteWebhookEndpoint: 'Point de réception supprimé',
  enableWebhookEndpoint: 'Point de réception réactivé',
  disableWebhookEndpoint: 'Point de réception désactivé',
  rotateWebhookSecret: 'Secret changé',
  sendWebhookTest: 'Test envoyé',
  sendWebhookExample: 'Exemple envoyé',
  replayWebhookDelivery: 'Livraison renvoyée',
  recoverWebhookDeliveries: 'Livraisons abandonnées renvoyées',
};

const actorText: Record<Schemas['AuditEvent']['actor']['kind'], string> = {
  session: 'Page',
  platform: 'Plateforme',
  operator: 'Opérateur',
};

async function renderAudit(): Promise<void> {
  const page = answered(
    await client.GET('/organisations/{org_id}/audit-events', { params: { path: { org_id: orgId }, query: { limit: 50 } } }),
  );
  if (!page) return;
  byId('audit-events').replaceChildren(
    table(
      'Les 50 derniers changements',
      ['Quand', 'Qui', 'Action', 'Résultat'],
      page.data.map((row) => [
        when(row.occurred_at),
        row.actor.email ? `${row.actor.email} (${actorText[row.actor.kind]})` : actorText[row.actor.kind],
        actionText[row.action] ?? row.action,
        row.outcome === 'succeeded' ? 'Fait' : h('span', { class: 'state-off' }, `Refusé (${row.refusal_code})`),
      ]),
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// The session, then every section

function onSubmit(id: string, action: (form: HTMLFormElement) => Promise<void>): void {
  const form = byId<HTMLFormElement>(id);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void action(form);
  });
}

async function start(): Promise<void> {
  const opened = await client.GET('/session');
  const session = opened.response.status === 401 ? null : answered(opened);
  if (!session) {
    byId('session-summary').textContent = 'Aucune session ouverte.';
    if (opened.response.status === 401)
      notify('Session expirée ou fermée : rouvrez « API et intégrations » depuis votre tableau de bord.', 'error');
    byId('contenu').hidden = true;
    return;
  }
  orgId = session.organisation.id;
  csrfToken = session.csrf_token;
  const summary = byId('session-summary');
  summary.replaceChildren(`${session.organisation.name} — ${session.actor_email}, jusqu’au ${when(session.expires_at)}`);
  if (session.read_only) summary.append(h('span', { class: 'readonly' }, 'Lecture seule'));
  const logout = byId<HTMLButtonElement>('logout');
  logout.hidden = false;
  logout.addEventListener('click', () => {
    void (async () => {
      const result = await client.DELETE('/session');
      if (!result.response.ok) return void answered(result);
      byId('contenu').hidden = true;
      byId('session-summary').textContent = 'Vous êtes déconnecté.';
      logout.hidden = true;
      notify('Session fermée. Rouvrez « API et intégrations » depuis votre tableau de bord pour revenir.');
    })();
  });

  const catalogue = answered(await client.GET('/webhook-event-types'));
  eventTypes = catalogue?.data ?? [];
  byId('endpoint-types').append(...typeCheckboxes('event_types', []));
  byId('filter-type').append(...eventTypes.map((type) => h('option', { value: type.event_type }, type.summary)));

  onSubmit('key-form', createKey);
  onSubmit('endpoint-form', createEndpoint);
  onSubmit('delivery-filters', renderDeliveries);
  onSubmit('recover-form', recoverDeliveries);
  await Promise.all([renderKeys(), renderEndpoints().then(renderDeliveries), renderOverview(), renderAudit()]);
  document.body.dataset.ready = 'true';
}

void start();
