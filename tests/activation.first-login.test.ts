import { beforeAll, describe, expect, it } from 'vitest';
import { activateOnFirstLogin } from '../db/activation';
import { bearer } from './support/app';
import { addLearner, createOrgWithKeys } from './support/factories';
import { useTestApp } from './support/lifecycle';

const fixture = useTestApp();
let org: Awaited<ReturnType<typeof createOrgWithKeys>>;
let other: Awaited<ReturnType<typeof createOrgWithKeys>>;

beforeAll(async () => {
  org = await createOrgWithKeys(fixture.db);
  other = await createOrgWithKeys(fixture.db, { name: 'Autre organisme' });
});

const activate = (membershipId: string, at: Date, orgId = org.orgId) =>
  fixture.db.transaction().execute((trx) => activateOnFirstLogin(trx, { orgId, membershipId, at }));

async function state(membershipId: string) {
  return fixture.db
    .selectFrom('memberships as m')
    .innerJoin('accounts as a', 'a.id', 'm.account_id')
    .innerJoin('licences as l', 'l.membership_id', 'm.id')
    .select(['m.status', 'm.joined_at', 'a.first_login_at', 'l.status as licence_status', 'l.activated_at'])
    .where('m.id', '=', membershipId)
    .executeTakeFirstOrThrow();
}

const activatedEvents = (orgId = org.orgId) =>
  fixture.db
    .selectFrom('events')
    .select(['type', 'data'])
    .where('org_id', '=', orgId)
    .where('type', '=', 'learner.activated')
    .orderBy('created_at')
    .execute();

async function invited(email: string) {
  return addLearner(fixture.db, org.orgId, {
    email,
    name: null,
    status: 'invité',
    at: '2026-01-10 10:00',
    licence: { type: 'standard', status: 'attribuée' },
  });
}

describe('activateOnFirstLogin', () => {
  it('moves an invited learner to actif, the licence to activée, and records learner.activated', async () => {
    const { membershipId, userId } = await invited('lina@exemple.fr');
    const at = new Date('2026-01-14T08:05:21.640Z');
    const result = await activate(membershipId, at);
    expect(result.activated).toBe(true);
    expect(await state(membershipId)).toEqual({
      status: 'actif',
      joined_at: at,
      first_login_at: at,
      licence_status: 'activée',
      activated_at: at,
    });
    const events = await activatedEvents();
    expect(events).toEqual([
      {
        type: 'learner.activated',
        data: { learner: { user_id: userId, email: 'lina@exemple.fr', name: null }, activated_at: '2026-01-14T09:05:21.640+01:00' },
      },
    ]);
    const users = (
      await fixture.app.inject({ method: 'GET', url: '/v1/users?email=lina@exemple.fr', headers: bearer(org.readKey) })
    ).json();
    expect(users.data[0]).toMatchObject({ statut: 'actif', licence_statut: 'activée', inscrit_le: '2026-01-14' });
  });

  it('is idempotent: a second call changes nothing and records no second event', async () => {
    const { membershipId } = await invited('noe@exemple.fr');
    const first = new Date('2026-02-01T09:00:00Z');
    await activate(membershipId, first);
    const before = await activatedEvents();
    expect(await activate(membershipId, new Date('2026-02-03T09:00:00Z'))).toEqual({ activated: false, eventId: null });
    expect(await state(membershipId)).toMatchObject({ joined_at: first, first_login_at: first, activated_at: first });
    expect(await activatedEvents()).toHaveLength(before.length);
  });

  it('records one event when the same first login is recorded concurrently', async () => {
    const { membershipId } = await invited('ines@exemple.fr');
    const before = (await activatedEvents()).length;
    const at = new Date('2026-03-01T09:00:00Z');
    const results = await Promise.all(Array.from({ length: 8 }, () => activate(membershipId, at)));
    expect(results.filter((r) => r.activated)).toHaveLength(1);
    expect(await activatedEvents()).toHaveLength(before + 1);
  });

  it('activates the licence of a learner attached as actif, with the summer offset', async () => {
    const { membershipId } = await addLearner(fixture.db, org.orgId, {
      email: 'paul@exemple.fr',
      name: 'Paul Roy',
      at: '2026-06-20 10:00',
      licence: { type: 'tutorat', status: 'attribuée' },
    });
    const at = new Date('2026-07-01T10:00:00Z');
    expect((await activate(membershipId, at)).activated).toBe(true);
    expect(await state(membershipId)).toMatchObject({ status: 'actif', licence_status: 'activée', activated_at: at });
    // joined_at stays the attachment date: only an invitation is joined at the first login.
    expect((await state(membershipId)).joined_at).toEqual(new Date('2026-06-20T08:00:00Z'));
    const last = (await activatedEvents()).at(-1)!;
    expect(last.data).toMatchObject({
      learner: { email: 'paul@exemple.fr', name: 'Paul Roy' },
      activated_at: '2026-07-01T12:00:00.000+02:00',
    });
  });

  it('does nothing for a learner of another organisation', async () => {
    const { membershipId } = await invited('secret@exemple.fr');
    expect(await activate(membershipId, new Date(), other.orgId)).toEqual({ activated: false, eventId: null });
    expect(await state(membershipId)).toMatchObject({ status: 'invité', first_login_at: null, licence_status: 'attribuée' });
    expect(await activatedEvents(other.orgId)).toEqual([]);
  });

  it('writes nothing when the caller’s transaction rolls back', async () => {
    const { membershipId } = await invited('rollback@exemple.fr');
    const before = (await activatedEvents()).length;
    await expect(
      fixture.db.transaction().execute(async (trx) => {
        await activateOnFirstLogin(trx, { orgId: org.orgId, membershipId, at: new Date() });
        throw new Error('rollback');
      }),
    ).rejects.toThrow('rollback');
    expect(await state(membershipId)).toMatchObject({ status: 'invité', licence_status: 'attribuée' });
    expect(await activatedEvents()).toHaveLength(before);
  });
});
