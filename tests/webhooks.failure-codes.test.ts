import { Migrator, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { migrations } from '../db/migrate';
import { createEndpoint } from '../db/webhook-endpoints';
import { generateWebhookSecret } from '../src/webhooks/signature';
import { createOrgWithKeys } from './support/factories';
import { useTestDatabase } from './support/lifecycle';

const database = useTestDatabase();
const migrationName = '20261128T0500-webhook-failure-codes';

describe('the failure codes of webhook attempts', () => {
  it('are given to the attempts logged before them, from their status and their sentence', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Codes des échecs' });
    const endpoint = await createEndpoint(database.db, {
      orgId,
      url: 'https://93.184.216.34/webhooks',
      secret: generateWebhookSecret(),
      eventTypes: ['learner.enrolled'],
    });
    const delivery = await sql<{ id: string }>`
      with event as (insert into events (org_id, type, data) values (${orgId}, 'learner.enrolled', '{}') returning id)
      insert into webhook_deliveries (event_id, event_type, endpoint_id, body) select id, 'learner.enrolled', ${endpoint.id}, '{}' from event returning id`
      .execute(database.db)
      .then((result) => result.rows[0]!);
    const migrator = new Migrator({ db: database.db, provider: { getMigrations: async () => migrations } });
    const before = Object.keys(migrations)[Object.keys(migrations).indexOf(migrationName) - 1]!;
    expect((await migrator.migrateTo(before)).error).toBeUndefined();

    const logged: [number | null, boolean, string | null][] = [
      [503, false, 'réponse HTTP 503'],
      [null, false, 'délai de réponse dépassé (10000 ms)'],
      [null, false, 'adresse refusée : 10.0.0.8 est une adresse privée'],
      [null, false, 'getaddrinfo ENOTFOUND hooks.exemple.fr'],
      [null, false, 'connect ECONNREFUSED 93.184.216.34:443'],
      [null, false, 'socket hang up (ECONNRESET)'],
      [null, false, 'certificate has expired (CERT_HAS_EXPIRED)'],
      [null, false, 'réponse trop longue'],
      [200, true, null],
    ];
    for (const [status, succeeded, error] of logged) {
      await sql`insert into webhook_attempts (delivery_id, attempted_at, duration_ms, status_code, succeeded, error)
        values (${delivery.id}, now(), 10, ${status}, ${succeeded}, ${error})`.execute(database.db);
    }
    const up = await migrator.migrateToLatest();
    expect(up.error).toBeUndefined();
    expect(up.results?.map((result) => result.migrationName)).toContain(migrationName);

    const codes = await database.db.selectFrom('webhook_attempts').select('error_code').orderBy('id').execute();
    expect(codes.map((row) => row.error_code)).toEqual([
      'http_status',
      'timeout',
      'address_refused',
      'dns_failure',
      'connection_refused',
      'connection_reset',
      'tls_error',
      'connection_error',
      null,
    ]);
    // A failure without its code, or a success with one, is refused.
    await expect(
      sql`insert into webhook_attempts (delivery_id, attempted_at, duration_ms, status_code, succeeded, error)
        values (${delivery.id}, now(), 10, 500, false, 'réponse HTTP 500')`.execute(database.db),
    ).rejects.toThrow(/webhook_attempts_failure_has_code/);
  });
});
