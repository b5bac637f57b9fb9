import { createApiKey, listApiKeys, revokeApiKey } from '../../db/api-keys';
import { migrateToLatest } from '../../db/migrate';
import { addLicences, createOrganisation, findOrganisation } from '../../db/organisations';
import type { LicenceType } from '../../db/tables';
import { displayPrefix, generateApiKey, hashApiKey } from '../../src/api-keys';
import { type AdminCommand, positiveInteger, requiredString, requiredUuid, UsageError } from '../command';

const domainPattern = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

async function requireOrganisation(context: Parameters<AdminCommand['run']>[0], orgId: string) {
  const organisation = await findOrganisation(context.db, orgId);
  if (!organisation) throw new UsageError(`Aucune organisation ${orgId}.`);
  return organisation;
}

export const commands: AdminCommand[] = [
  {
    name: 'migrate',
    usage: '',
    description: 'Applique les migrations du schéma (le serveur le fait aussi au démarrage).',
    options: {},
    async run({ db }) {
      return { applied: await migrateToLatest(db) };
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
      return { id: organisation.id, name: organisation.name };
    },
  },
  {
    name: 'licences add',
    usage: '--org ID --type standard|tutorat --count N',
    description: 'Ajoute N licences disponibles d’un type à une organisation.',
    options: { org: { type: 'string' }, type: { type: 'string' }, count: { type: 'string' } },
    async run(context) {
      const orgId = requiredUuid(context.values, 'org');
      const type = requiredString(context.values, 'type');
      if (type !== 'standard' && type !== 'tutorat') throw new UsageError('--type doit valoir standard ou tutorat.');
      const count = positiveInteger(context.values, 'count');
      await requireOrganisation(context, orgId);
      const added = await addLicences(context.db, orgId, type as LicenceType, count);
      return { org: orgId, type, added };
    },
  },
  {
    name: 'key create',
    usage: '--org ID [--write] [--expires AAAA-MM-JJ] [--label TEXTE]',
    description: 'Crée une clé API (lecture ; --write ajoute l’écriture). La clé n’est affichée qu’une fois.',
    options: { org: { type: 'string' }, write: { type: 'boolean' }, expires: { type: 'string' }, label: { type: 'string' } },
    async run(context) {
      const orgId = requiredUuid(context.values, 'org');
      const expires = context.values.expires;
      if (expires !== undefined) {
        const valid =
          typeof expires === 'string' &&
          /^\d{4}-\d{2}-\d{2}$/.test(expires) &&
          new Date(`${expires}T00:00:00Z`).toISOString().startsWith(expires);
        if (!valid) throw new UsageError(`--expires doit être une date AAAA-MM-JJ (reçu « ${String(expires)} »).`);
      }
      await requireOrganisation(context, orgId);
      const key = generateApiKey();
      const scopes: ('read' | 'write')[] = context.values.write ? ['read', 'write'] : ['read'];
      const created = await createApiKey(context.db, {
        orgId,
        keyHash: hashApiKey(key),
        keyPrefix: displayPrefix(key),
        label: typeof context.values.label === 'string' ? context.values.label : null,
        scopes,
        expiresAt: (expires as string | undefined) ?? null,
      });
      return { id: created.id, key, scopes: created.scopes, expires_at: (expires as string | undefined) ?? null };
    },
  },
  {
    name: 'key list',
    usage: '--org ID',
    description: 'Liste les clés d’une organisation (sans la clé elle-même).',
    options: { org: { type: 'string' } },
    async run(context) {
      const orgId = requiredUuid(context.values, 'org');
      await requireOrganisation(context, orgId);
      const keys = await listApiKeys(context.db, orgId);
      return {
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
      };
    },
  },
  {
    name: 'key revoke',
    usage: '--id KEY_ID',
    description: 'Révoque une clé : elle répond 401 dès la requête suivante.',
    options: { id: { type: 'string' } },
    async run(context) {
      const id = requiredUuid(context.values, 'id');
      if (!(await revokeApiKey(context.db, id))) throw new UsageError(`Aucune clé ${id}.`);
      return { id, revoked: true };
    },
  },
];
