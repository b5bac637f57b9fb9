import { findKeyOrganisation, listApiKeys } from '../../db/api-keys';
import { findLearner } from '../../db/learners';
import { migrateToLatest } from '../../db/migrate';
import { addLicences, countLicences, createOrganisation, listOrganisations, revokeLearnerLicence } from '../../db/organisations';
import type { LicenceType } from '../../db/tables';
import { ExpiryInThePast, issueApiKey, lastValidDay, revokeOrganisationKey } from '../../src/api-keys';
import { issuePortalLink } from '../../src/portal';
import {
  type AdminCommand,
  oneOf,
  operatorActor,
  optionalDate,
  optionalString,
  positiveInteger,
  requiredString,
  requiredUuid,
  requireOrganisation,
  UsageError,
} from '../command';
import { count, operatorDate, operatorDateTime, scopesText, sheet, table } from '../output';

const domainPattern = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;
const licenceTypes: LicenceType[] = ['standard', 'tutorat'];

/** `« Formations Dupont »`: how messages name an organisation. */
const named = (organisation: { name: string }) => `« ${organisation.name} »`;

/** A session's lifetime from `--expires`: 1h to 168h, or 1d to 7d. */
function sessionLifetime(text: string): number {
  const match = /^(\d+)([hd])$/.exec(text);
  const seconds = match ? Number(match[1]) * (match[2] === 'h' ? 3600 : 86_400) : Number.NaN;
  if (!(seconds >= 3600 && seconds <= 7 * 86_400)) {
    throw new UsageError(`--expires doit être une durée de 1h à 7d (reçu « ${text} »).`);
  }
  return seconds;
}

function keyState(key: { revoked_at: Date | null; expires_at: Date | null }, now: Date): string {
  if (key.revoked_at) return `révoquée le ${operatorDateTime(key.revoked_at)}`;
  if (key.expires_at && key.expires_at <= now) return 'expirée';
  return 'active';
}

export const commands: AdminCommand[] = [
  {
    name: 'migrate',
    usage: '',
    description: 'Applique les migrations du schéma (le serveur le fait aussi au démarrage).',
    options: {},
    async run({ db }) {
      const applied = await migrateToLatest(db);
      return {
        json: { applied },
        text:
          applied.length === 0
            ? 'Schéma déjà à jour : aucune migration à appliquer.'
            : `Schéma mis à jour : ${count(applied.length, 'migration appliquée', 'migrations appliquées')}.\n${applied.map((name) => `  ${name}`).join('\n')}`,
      };
    },
  },
  {
    name: 'org create',
    usage: '--name NOM [--domains a.fr,b.fr]',
    description: 'Crée une organisation ; --domains restreint les adresses inscriptibles (vide : toutes).',
    options: { name: { type: 'string' }, domains: { type: 'string' } },
    async run(context) {
      const name = requiredString(context.values, 'name');
      const domains =
        typeof context.values.domains === 'string'
          ? context.values.domains
              .split(',')
              .map((d) => d.trim().toLowerCase())
              .filter(Boolean)
          : [];
      const invalid = domains.find((d) => !domainPattern.test(d));
      if (invalid) throw new UsageError(`Domaine invalide : « ${invalid} ».`);
      const organisation = await createOrganisation(context.db, { name, allowedEmailDomains: domains });
      return {
        json: { id: organisation.id, name: organisation.name },
        text: [
          `Organisation ${named(organisation)} créée.`,
          sheet([
            ['identifiant', organisation.id],
            ['domaines autorisés', domains.length > 0 ? domains.join(', ') : 'tous'],
          ]),
          'Ensuite : licences add --org ID, puis key create --org ID.',
        ].join('\n'),
      };
    },
  },
  {
    name: 'org list',
    usage: '[--name TEXTE]',
    description:
      'Liste les organisations, les plus anciennes d’abord, avec leurs apprenants, licences et clés utilisables ; --name garde les noms qui contiennent TEXTE.',
    options: { name: { type: 'string' } },
    async run(context) {
      const nameContains = optionalString(context.values, 'name');
      const organisations = await listOrganisations(context.db, { nameContains });
      return {
        json: {
          organisations: organisations.map((o) => ({
            id: o.id,
            name: o.name,
            allowed_email_domains: o.allowed_email_domains,
            created_at: o.created_at.toISOString(),
            learners: o.learners,
            licences: o.licences,
            available_licences: o.available_licences,
            usable_keys: o.usable_keys,
          })),
        },
        text: table(
          organisations,
          [
            { header: 'Identifiant', value: (o) => o.id },
            { header: 'Nom', value: (o) => o.name },
            { header: 'Créée le', value: (o) => operatorDate(o.created_at) },
            { header: 'Domaines', value: (o) => (o.allowed_email_domains.length > 0 ? o.allowed_email_domains.join(', ') : 'tous') },
            { header: 'Apprenants', value: (o) => o.learners, align: 'right' },
            { header: 'Licences libres', value: (o) => `${o.available_licences} / ${o.licences}`, align: 'right' },
            { header: 'Clés utilisables', value: (o) => o.usable_keys, align: 'right' },
          ],
          nameContains
            ? `Aucune organisation dont le nom contient « ${nameContains} ».`
            : 'Aucune organisation : créez-en une avec org create.',
        ),
      };
    },
  },
  {
    name: 'licences add',
    usage: '--org ID --type standard|tutorat --count N',
    description: 'Ajoute N licences disponibles d’un type à une organisation.',
    options: { org: { type: 'string' }, type: { type: 'string' }, count: { type: 'string' } },
    async run(context) {
      const orgId = requiredUuid(context.values, 'org');
      const type = oneOf(context.values, 'type', licenceTypes, true);
      const wanted = positiveInteger(context.values, 'count');
      const organisation = await requireOrganisation(context.db, orgId);
      const added = await addLicences(context.db, orgId, type, wanted);
      const available = (await countLicences(context.db, orgId)).find((c) => c.type === type)!.byStatus.disponible;
      return {
        json: { org: orgId, type, added },
        text: `${count(added, `licence ${type} ajoutée`, `licences ${type} ajoutées`)} à ${named(organisation)} : ${count(available, 'disponible')} en tout.`,
      };
    },
  },
  {
    name: 'licences list',
    usage: '--org ID',
    description: 'Compte les licences d’une organisation par type et par statut.',
    options: { org: { type: 'string' } },
    async run(context) {
      const orgId = requiredUuid(context.values, 'org');
      const organisation = await requireOrganisation(context.db, orgId);
      const counts = await countLicences(context.db, orgId);
      return {
        json: {
          org: orgId,
          licences: counts.map((c) => ({
            type: c.type,
            total: c.total,
            available: c.byStatus.disponible,
            assigned: c.byStatus.attribuée,
            activated: c.byStatus.activée,
            revoked: c.byStatus.révoquée,
          })),
        },
        text: [
          `Licences de ${named(organisation)} :`,
          table(
            counts,
            [
              { header: 'Type', value: (c) => c.type },
              { header: 'Total', value: (c) => c.total, align: 'right' },
              { header: 'Disponibles', value: (c) => c.byStatus.disponible, align: 'right' },
              { header: 'Attribuées', value: (c) => c.byStatus.attribuée, align: 'right' },
              { header: 'Activées', value: (c) => c.byStatus.activée, align: 'right' },
              { header: 'Révoquées', value: (c) => c.byStatus.révoquée, align: 'right' },
            ],
            '',
          ),
        ].join('\n'),
      };
    },
  },
  {
    name: 'licences revoke',
    usage: '--org ID (--email EMAIL | --user USER_ID)',
    description:
      'Révoque la licence d’un apprenant (statut révoquée) : elle lui reste attachée et ne libère aucune place. Sans effet sur une licence déjà révoquée.',
    options: { org: { type: 'string' }, email: { type: 'string' }, user: { type: 'string' } },
    async run(context) {
      const orgId = requiredUuid(context.values, 'org');
      const email = optionalString(context.values, 'email');
      const userId = context.values.user === undefined ? null : requiredUuid(context.values, 'user');
      if ((email === null) === (userId === null)) {
        throw new UsageError('Indiquez l’apprenant par --email ou par --user (son user_id), l’un des deux.');
      }
      const organisation = await requireOrganisation(context.db, orgId);
      const learner = await findLearner(context.db, orgId, { email, userId });
      if (!learner) throw new UsageError(`Aucun apprenant ${email ?? userId} dans l’organisation ${named(organisation)}.`);
      const revocation = await revokeLearnerLicence(context.db, orgId, learner.membershipId);
      if (!revocation) throw new UsageError(`L’apprenant ${learner.email} n’a aucune licence : rien à révoquer.`);
      const since = revocation.revokedAt ? ` depuis le ${operatorDateTime(revocation.revokedAt)}` : '';
      return {
        json: {
          org: orgId,
          user_id: learner.userId,
          email: learner.email,
          licence_id: revocation.licenceId,
          type: revocation.type,
          status: 'révoquée',
          revoked_at: revocation.revokedAt?.toISOString() ?? null,
          already_revoked: !revocation.revokedNow,
        },
        text: revocation.revokedNow
          ? `Licence ${revocation.type} de ${learner.email} révoquée le ${operatorDateTime(revocation.revokedAt)} : elle lui reste attachée et ne libère aucune place.`
          : `La licence ${revocation.type} de ${learner.email} était déjà révoquée${since} : rien n’a changé.`,
      };
    },
  },
  {
    name: 'key create',
    usage: '--org ID [--write] [--expires AAAA-MM-JJ] [--label TEXTE]',
    description:
      'Crée une clé API (lecture ; --write ajoute l’écriture), valable jusqu’à la fin du jour --expires (heure de Paris). La clé n’est affichée qu’une fois.',
    options: { org: { type: 'string' }, write: { type: 'boolean' }, expires: { type: 'string' }, label: { type: 'string' } },
    async run(context) {
      const orgId = requiredUuid(context.values, 'org');
      const expires = optionalDate(context.values, 'expires');
      const organisation = await requireOrganisation(context.db, orgId);
      const scopes: ('read' | 'write')[] = context.values.write ? ['read', 'write'] : ['read'];
      const label = optionalString(context.values, 'label');
      const issued = await issueApiKey(context.db, { orgId, label, scopes, expiresOn: expires }, operatorActor).catch((error: unknown) => {
        if (!(error instanceof ExpiryInThePast)) throw error;
        throw new UsageError(
          `--expires ${error.expiresOn} est déjà passé (nous sommes le ${error.today}, heure de Paris) : la clé serait refusée dès sa création. ` +
            'Indiquez aujourd’hui ou une date à venir, ou omettez --expires pour une clé sans expiration.',
        );
      });
      const { apiKey: created, key } = issued;
      return {
        json: { id: created.id, key, scopes: created.scopes, expires_at: expires },
        text: [
          `Clé API créée pour ${named(organisation)} :`,
          '',
          `  ${key}`,
          '',
          'Notez-la maintenant : elle n’est affichée qu’une fois (seule son empreinte est conservée).',
          sheet([
            ['identifiant', created.id],
            ['droits', scopesText(created.scopes)],
            ['valable jusqu’au', expires === null ? 'sans expiration' : `${expires} inclus (heure de Paris)`],
            ['libellé', label],
          ]),
        ].join('\n'),
      };
    },
  },
  {
    name: 'key list',
    usage: '--org ID',
    description: 'Liste les clés d’une organisation (sans la clé elle-même), avec leur état.',
    options: { org: { type: 'string' } },
    async run(context) {
      const orgId = requiredUuid(context.values, 'org');
      const organisation = await requireOrganisation(context.db, orgId);
      const keys = await listApiKeys(context.db, orgId);
      const now = new Date();
      const usable = keys.filter((k) => keyState(k, now) === 'active').length;
      return {
        json: {
          org: orgId,
          keys: keys.map((k) => ({
            id: k.id,
            prefix: k.key_prefix,
            label: k.label,
            scopes: k.scopes,
            expires_at: k.expires_at?.toISOString() ?? null,
            revoked_at: k.revoked_at?.toISOString() ?? null,
            created_at: k.created_at.toISOString(),
          })),
        },
        text:
          keys.length === 0
            ? `Aucune clé pour ${named(organisation)} : créez-en une avec key create --org ${orgId}.`
            : [
                `Clés de ${named(organisation)} : ${count(keys.length, 'clé')}, dont ${count(usable, 'active')} (dates et heures de Paris).`,
                table(
                  keys,
                  [
                    { header: 'Identifiant', value: (k) => k.id },
                    { header: 'Début de la clé', value: (k) => `${k.key_prefix}…` },
                    { header: 'Libellé', value: (k) => k.label },
                    { header: 'Droits', value: (k) => scopesText(k.scopes) },
                    { header: 'Valable jusqu’au', value: (k) => (k.expires_at ? lastValidDay(k.expires_at) : 'sans expiration') },
                    { header: 'État', value: (k) => keyState(k, now) },
                    { header: 'Créée le', value: (k) => operatorDateTime(k.created_at) },
                  ],
                  '',
                ),
              ].join('\n'),
      };
    },
  },
  {
    name: 'portal link',
    usage: '--org ORG_ID --as EMAIL [--read-only] [--expires 1h…7d]',
    description:
      'Crée un lien à usage unique vers la page « API et intégrations » de l’organisation, pour l’administrateur nommé : à ouvrir dans les 10 minutes ; la session dure --expires (24h par défaut).',
    options: { org: { type: 'string' }, as: { type: 'string' }, 'read-only': { type: 'boolean' }, expires: { type: 'string' } },
    async run(context) {
      const orgId = requiredUuid(context.values, 'org');
      const email = optionalString(context.values, 'as');
      if (email === null || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) {
        throw new UsageError(`--as doit être l’adresse électronique de l’administrateur (reçu « ${email ?? ''} »).`);
      }
      const sessionLifetimeSeconds = sessionLifetime(optionalString(context.values, 'expires') ?? '24h');
      const organisation = await requireOrganisation(context.db, orgId);
      const baseUrl = context.config.publicBaseUrl ?? `http://${context.config.host}:${context.config.port}`;
      const link = await issuePortalLink(
        context.db,
        { orgId, actorEmail: email, readOnly: context.values['read-only'] === true, sessionLifetimeSeconds },
        operatorActor,
        baseUrl,
      );
      return {
        json: { url: link.url, expires_at: link.expiresAt.toISOString(), session_lifetime_seconds: sessionLifetimeSeconds },
        text: [
          `Lien vers la page « API et intégrations » de ${named(organisation)}, pour ${email.trim().toLowerCase()} :`,
          '',
          `  ${link.url}`,
          '',
          `À ouvrir avant ${operatorDateTime(link.expiresAt)}, une seule fois ; la session ouverte dure ${sessionLifetimeSeconds / 3600} h${context.values['read-only'] === true ? ', en lecture seule' : ''}.`,
        ].join('\n'),
      };
    },
  },
  {
    name: 'key revoke',
    usage: '--id KEY_ID',
    description: 'Révoque une clé : elle répond 401 dès la requête suivante. Sans effet sur une clé déjà révoquée.',
    options: { id: { type: 'string' } },
    async run(context) {
      const id = requiredUuid(context.values, 'id');
      const orgId = await findKeyOrganisation(context.db, id);
      const revocation = orgId === null ? null : await revokeOrganisationKey(context.db, orgId, id, operatorActor);
      if (!revocation) throw new UsageError(`Aucune clé ${id}.`);
      return {
        json: { id, revoked: true, revoked_at: revocation.revokedAt.toISOString(), already_revoked: !revocation.revokedNow },
        text: revocation.revokedNow
          ? `Clé ${id} révoquée le ${operatorDateTime(revocation.revokedAt)} : elle est refusée (401) dès la requête suivante.`
          : `La clé ${id} était déjà révoquée depuis le ${operatorDateTime(revocation.revokedAt)} : rien n’a changé.`,
      };
    },
  },
];
