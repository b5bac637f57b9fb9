/**
 * The closed set of errors the API answers with, and the one place that maps them to an HTTP
 * status and a French sentence. Handlers throw `ApiError`; `error-handler.ts` renders it
 * (docs/decisions.md#errors).
 */
const errorCatalogue = {
  bad_request: { status: 400, message: 'Requête HTTP mal formée.' },
  invalid_url: { status: 400, message: 'Adresse invalide : un encodage « %XX » est incorrect.' },
  invalid_parameter: { status: 400, message: 'Paramètre invalide.' },
  invalid_body: { status: 400, message: 'Corps de la requête invalide.' },
  invalid_json: { status: 400, message: 'Corps de la requête invalide : ce n’est pas un JSON valide.' },
  body_missing: { status: 400, message: 'Corps de la requête manquant : envoyez un objet JSON avec « Content-Type: application/json ».' },
  unknown_programme: { status: 400, message: 'Programme inconnu dans votre organisation.' },
  invalid_email: { status: 400, message: 'Adresse électronique invalide.' },
  learner_identifier_missing: { status: 400, message: 'Indiquez le paramètre « email » ou « user_id » de l’apprenant.' },
  webhook_url_refused: { status: 400, message: 'Adresse refusée : une adresse https publique est attendue.' },
  email_domain_not_allowed: {
    status: 400,
    message: 'Le domaine de cette adresse électronique n’est pas autorisé pour votre organisation.',
  },
  key_missing: { status: 401, message: 'Clé API manquante : envoyez l’en-tête « Authorization: Bearer sk_live_… ».' },
  key_invalid: { status: 401, message: 'Clé API invalide.' },
  key_revoked: { status: 401, message: 'Clé API révoquée.' },
  key_expired: { status: 401, message: 'Clé API expirée.' },
  credentials_missing: {
    status: 401,
    message: 'Identifiez-vous : jeton de la plateforme (Authorization: Bearer) ou session de la page « API et intégrations ».',
  },
  management_token_invalid: { status: 401, message: 'Jeton de gestion invalide.' },
  session_expired: {
    status: 401,
    message: 'Session expirée ou fermée : rouvrez la page « API et intégrations » depuis votre tableau de bord.',
  },
  csrf_rejected: {
    status: 403,
    message: 'Requête refusée : elle ne vient pas de la page « API et intégrations » (Origin ou X-CSRF-Token absent ou invalide).',
  },
  session_read_only: { status: 403, message: 'Accès en lecture seule : ce lien permet de consulter, pas de modifier.' },
  platform_only: { status: 403, message: 'Réservé au serveur de la plateforme (jeton MANAGEMENT_TOKEN).' },
  session_only: { status: 403, message: 'Réservé à la page « API et intégrations ».' },
  scope_write_required: {
    status: 403,
    message: 'Cette clé API est en lecture seule : l’inscription demande une clé avec le droit d’écriture (scope « write »).',
  },
  unknown_resource: { status: 404, message: 'Ressource inconnue.' },
  unknown_organisation: { status: 404, message: 'Organisation inconnue.' },
  unknown_api_key: { status: 404, message: 'Clé API inconnue dans cette organisation.' },
  unknown_webhook_endpoint: { status: 404, message: 'Point de réception inconnu dans cette organisation.' },
  unknown_webhook_delivery: { status: 404, message: 'Livraison inconnue dans cette organisation.' },
  unknown_learner: { status: 404, message: 'Apprenant inconnu dans votre organisation.' },
  route_not_found: { status: 404, message: 'Adresse inconnue.' },
  method_not_allowed: { status: 405, message: 'Méthode non autorisée sur cette adresse.' },
  request_timeout: { status: 408, message: 'La requête n’a pas été reçue en entier à temps.' },
  already_member: { status: 409, message: 'Cet apprenant est déjà membre de votre organisation.' },
  licence_unavailable: { status: 409, message: 'Aucune licence disponible dans votre organisation.' },
  insufficient_licences: { status: 409, message: 'Licences disponibles insuffisantes pour ce lot : personne n’a été inscrit.' },
  endpoint_limit_reached: {
    status: 409,
    message: '20 points de réception au plus par organisation : supprimez-en un avant d’en créer un autre.',
  },
  delivery_pending: { status: 409, message: 'Cette livraison est déjà en attente d’envoi : elle partira à sa prochaine tentative.' },
  endpoint_disabled: {
    status: 409,
    message: 'Point de réception désactivé : réactivez-le avant de renvoyer ses livraisons.',
  },
  body_too_large: { status: 413, message: 'Corps de la requête trop volumineux.' },
  uri_too_long: { status: 414, message: 'Adresse trop longue.' },
  unsupported_media_type: { status: 415, message: 'Type de contenu non pris en charge : envoyez « Content-Type: application/json ».' },
  rate_limited: { status: 429, message: 'Trop de requêtes : limite de débit atteinte.' },
  headers_too_large: { status: 431, message: 'En-têtes de la requête trop volumineux (16 Kio au plus, adresse comprise).' },
  internal: {
    status: 500,
    message:
      'Erreur interne du serveur. Réessayez plus tard ; si le problème persiste, contactez le support en citant l’en-tête X-Request-Id de la réponse.',
  },
  service_unavailable: {
    status: 503,
    message: 'Service momentanément indisponible : réessayez dans quelques secondes (en-tête Retry-After).',
  },
  server_busy: {
    status: 503,
    message:
      'Serveur momentanément saturé : trop de requêtes en cours sur cette instance. Réessayez dans quelques secondes (en-tête Retry-After).',
  },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof errorCatalogue;

/** Every code of the catalogue. */
export const errorCodes = Object.keys(errorCatalogue) as ErrorCode[];

/** The HTTP status a code is always answered with. */
export function errorStatus(code: ErrorCode): number {
  return errorCatalogue[code].status;
}

export class ApiError extends Error {
  readonly statusCode: number;

  constructor(
    readonly code: ErrorCode,
    message?: string,
    /** Extra body fields the contract names: `param` (the parameter or field at fault), `available` (404), `retry_after` (429). */
    readonly extraBody: Record<string, unknown> = {},
    /** Response headers that belong to this error: `Allow` (405), `Retry-After` (429). */
    readonly headers: Record<string, string | number> = {},
  ) {
    super(message ?? errorCatalogue[code].message);
    this.name = 'ApiError';
    this.statusCode = errorStatus(code);
  }
}

/** Seconds a client should wait before trying again after a 503. */
export const retryAfterUnavailableSeconds = 5;

/** A 503 with its Retry-After: the database does not answer, the answer is late, or the server is stopping. */
export function serviceUnavailable(message: string): ApiError {
  return new ApiError('service_unavailable', message, {}, { 'Retry-After': retryAfterUnavailableSeconds });
}

/** The 503 of a server whose every database connection stayed busy while the request waited for one. */
export function serverBusy(): ApiError {
  return new ApiError('server_busy', undefined, {}, { 'Retry-After': retryAfterUnavailableSeconds });
}

/**
 * The error body of both APIs: the French sentence, its stable code, `param` (the parameter or
 * field at fault), `available` or `retry_after` where the error has them, and `doc_url`, where its
 * code is explained.
 */
export function errorBody(error: ApiError, docUrl: string): Record<string, unknown> {
  return { error: error.message, code: error.code, ...error.extraBody, doc_url: docUrl };
}

/** The management API's error body: also `retry_after` on a 503, as on a 429. */
export function managementErrorBody(error: ApiError, docUrl: string): Record<string, unknown> {
  const retryAfter = error.headers['Retry-After'];
  return { ...errorBody(error, docUrl), ...(retryAfter === undefined ? {} : { retry_after: Number(retryAfter) }) };
}
