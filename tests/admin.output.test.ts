import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { admin, adminText } from './support/admin';
import { addLearner, createKey, createOrgWithKeys } from './support/factories';
import { useTestDatabase } from './support/lifecycle';
import { runAdminIntoSlowPipe } from './support/server-process';

const database = useTestDatabase();

/** What an operator reads, checked for the old machine shapes that must not come back. */
async function human(args: string[]): Promise<string> {
  const { stdout } = await adminText(database.url, args);
  // No `key: value` lines of raw fields, no UTC ISO instants, no JSON.
  expect(stdout, args.join(' ')).not.toMatch(/^[a-z_]+: /m);
  expect(stdout, args.join(' ')).not.toMatch(/\d{4}-\d\d-\d\dT\d\d:\d\d/);
  expect(stdout, args.join(' ')).not.toMatch(/^[[{]/);
  return stdout;
}

const uuid = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

describe('operator commands without --json', () => {
  it('print French sentences and tables, with dates and times of Paris', async () => {
    expect(await human(['migrate'])).toBe('Schéma déjà à jour : aucune migration à appliquer.\n');

    const created = await human(['org', 'create', '--name', 'Organisme Éole', '--domains', 'eole.fr']);
    expect(created).toMatch(
      new RegExp(`^Organisation « Organisme Éole » créée\\.\\n  identifiant        : (${uuid})\\n  domaines autorisés : eole\\.fr\\n`),
    );
    const orgId = new RegExp(uuid).exec(created)![0];
    // 22:30 UTC on 30 June is already 1 July in Paris.
    await sql`update organisations set created_at = '2026-06-30T22:30:00Z' where id = ${orgId}`.execute(database.db);

    const [licencesAdded, keyCreated] = await Promise.all([
      human(['licences', 'add', '--org', orgId, '--type', 'standard', '--count', '3']),
      human(['key', 'create', '--org', orgId, '--write', '--expires', '2027-12-31', '--label', 'ETL']),
    ]);
    expect(licencesAdded).toBe('3 licences standard ajoutées à « Organisme Éole » : 3 disponibles en tout.\n');
    expect(keyCreated).toMatch(/^Clé API créée pour « Organisme Éole » :\n\n {2}sk_live_[\w-]{43}\n\nNotez-la maintenant/);
    expect(keyCreated).toContain('  droits           : lecture, écriture\n');
    expect(keyCreated).toContain('  valable jusqu’au : 2027-12-31 inclus (heure de Paris)\n');
    expect(keyCreated).toContain('  libellé          : ETL\n');
    const keyId = new RegExp(`identifiant +: (${uuid})`).exec(keyCreated)![1]!;
    await sql`update api_keys set created_at = '2026-01-15T23:10:00Z' where id = ${keyId}`.execute(database.db);
    const readOnly = await createKey(database.db, orgId, ['read']);
    await sql`update api_keys set created_at = '2026-01-16T08:00:00Z', revoked_at = '2026-03-29T00:30:00Z' where id = ${readOnly.id}`.execute(
      database.db,
    );

    const [orgList, keyList, keyListJson] = await Promise.all([
      human(['org', 'list']),
      human(['key', 'list', '--org', orgId]),
      admin(database.url, ['key', 'list', '--org', orgId]),
    ]);
    expect(orgList.split('\n')).toEqual([
      'Identifiant                           Nom             Créée le    Domaines  Apprenants  Licences libres  Clés utilisables',
      `${orgId}  Organisme Éole  2026-07-01  eole.fr            0            3 / 3                 1`,
      '',
    ]);
    expect(keyList.split('\n')).toEqual([
      'Clés de « Organisme Éole » : 2 clés, dont 1 active (dates et heures de Paris).',
      'Identifiant                           Début de la clé  Libellé  Droits             Valable jusqu’au  État                          Créée le',
      expect.stringMatching(
        new RegExp(
          `^${keyId}  sk_live_[\\w-]{6}…  ETL      lecture, écriture  2027-12-31        active                        2026-01-16 00:10$`,
        ),
      ),
      expect.stringMatching(
        new RegExp(
          `^${readOnly.id}  sk_live_[\\w-]{6}…  test     lecture            sans expiration   révoquée le 2026-03-29 01:30  2026-01-16 09:00$`,
        ),
      ),
      '',
    ]);
    // --json stays machine output: ISO instants.
    expect(keyListJson.keys[0]).toMatchObject({ expires_at: '2027-12-31T23:00:00.000Z', created_at: '2026-01-15T23:10:00.000Z' });

    await addLearner(database.db, orgId, { email: 'ana.roux@eole.fr', licence: { type: 'standard', status: 'activée' } });
    const [revoked, keyRevoked] = await Promise.all([
      human(['licences', 'revoke', '--org', orgId, '--email', 'ana.roux@eole.fr']),
      human(['key', 'revoke', '--id', keyId]),
    ]);
    expect(revoked).toMatch(
      /^Licence standard de ana\.roux@eole\.fr révoquée le \d{4}-\d\d-\d\d \d\d:\d\d : elle lui reste attachée et ne libère aucune place\.\n$/,
    );
    expect(keyRevoked).toMatch(
      new RegExp(
        `^Clé ${keyId} révoquée le \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d : elle est refusée \\(401\\) dès la requête suivante\\.\\n$`,
      ),
    );
    expect((await human(['licences', 'list', '--org', orgId])).split('\n')).toEqual([
      'Licences de « Organisme Éole » :',
      'Type      Total  Disponibles  Attribuées  Activées  Révoquées',
      'standard      4            3           0         0          1',
      'tutorat       0            0           0         0          0',
      '',
    ]);
    expect(await human(['org', 'list', '--name', 'Dupont'])).toBe('Aucune organisation dont le nom contient « Dupont ».\n');
  }, 120_000);

  it('print what seed and simulate did', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Formations Horizon' });
    const seeded = await human(['seed', '--org', orgId, '--learners', '3', '--seed', '4', '--year', '2025']);
    expect(seeded).toMatch(
      /^« Formations Horizon » peuplée : 3 apprenants, [\d  ]+ lignes en [\d,]+ s, activité du 2023-01-01 au 2025-12-31 \(graine 4\)\.\nProgrammes : [a-z-]+(, [a-z-]+)+\.\nTable +Lignes\n/,
    );
    const simulated = await human(['simulate', '--org', orgId, '--events', '3', '--rate', '100']);
    expect(simulated).toMatch(/^3 événements enregistrés pour « Formations Horizon » en [\d,]+ s\.\nÉvénement +Nombre\n/);
    expect(simulated).toMatch(/\nÉtape jouée +Nombre\n/);
  }, 120_000);

  it('write a whole table into a pipe read slowly, well beyond 64 KiB', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Beaucoup de clés' });
    for (let i = 0; i < 600; i += 1) await createKey(database.db, orgId, ['read']);
    const { code, output } = await runAdminIntoSlowPipe(`key list --org ${orgId}`, database.url);
    expect(Buffer.byteLength(output)).toBeGreaterThan(64 * 1024);
    const lines = output.trimEnd().split('\n');
    expect(lines[0]).toBe('Clés de « Beaucoup de clés » : 602 clés, dont 602 actives (dates et heures de Paris).');
    expect(lines).toHaveLength(2 + 602);
    expect(code).toBe(0);
  }, 60_000);
});
