import type { components } from '../codegen/openapi';
import { sql } from 'kysely';
import type { DB } from './connection';
import { recordEvent } from './webhooks';
import { parisDate } from './render';
import type { LicenceType } from './tables';

/** What the organisation allows, and its programmes among those a request names. */
export interface EnrolmentRules {
  allowedEmailDomains: string[];
  programmeIdsBySlug: Map<string, string>;
}

export async function loadEnrolmentRules(db: DB, orgId: string, slugs: string[]): Promise<EnrolmentRules> {
  const [organisation, programmes] = await Promise.all([
    db.selectFrom('organisations').select('allowed_email_domains').where('id', '=', orgId).executeTakeFirstOrThrow(),
    slugs.length === 0 ? [] : db.selectFrom('programmes').select(['id', 'slug'])
      .where('org_id', '=', orgId).where('slug', 'in', [...new Set(slugs)]).execute(),
  ]);
  return {
    allowedEmailDomains: organisation.allowed_email_domains.map((domain) => domain.toLowerCase()),
    programmeIdsBySlug: new Map(programmes.map((programme) => [programme.slug, programme.id])),
  };
}

/** One learner to enrol, already checked: canonical email, allowed domain, known programmes. */
export interface EnrolmentCandidate {
  email: string;
  programmes: { id: string; slug: string }[];
}

/** The `member` object of the contract. */
export type Member = components['schemas']['Member'];

export type EnrolmentOutcome =
  | { kind: 'enrolled'; status: 'active' | 'pending'; member: Member }
  /** Already a member of the organisation (no licence used). */
  | { kind: 'already_member' }
  /** The same email earlier in the same request. */
  | { kind: 'duplicate' }
  | { kind: 'no_licence' };

/** An atomic batch needs more licences than the organisation has free: nothing was written. */
export class InsufficientLicences extends Error {
  constructor(readonly needed: number, readonly available: number) {
    super(`insufficient licences: ${needed} needed, ${available} available`);
    this.name = 'InsufficientLicences';
  }
}

/** Two-key advisory locks: a key space apart from the one-key locks pg-boss takes. */
const atomicPickLockNamespace = 0x656e72;

/** Waits for the organisation's turn to pick licences for an atomic batch; held until the transaction ends. */
export async function takeAtomicPickingTurn(trx: DB, orgId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(${atomicPickLockNamespace}, hashtext(${orgId}))`.execute(trx);
}

interface AccountRow {
  id: string;
  email: string;
  name: string | null;
  /** A real account: not only a pending invitation somewhere (see enrolLearners). */
  has_account: boolean;
}

interface NewMembershipRow {
  id: string;
  account_id: string;
  inscrit_le: string;
}

/**
 * Enrols learners in the organisation, in one transaction, and answers one outcome per candidate in
 * the same order. Correctness under concurrency comes from the database alone:
 * - accounts and memberships are inserted with `on conflict do nothing` on their unique keys, so an
 *   email enrolled concurrently is created once and the other requests see "already a member";
 *   both are inserted in key order, so two overlapping batches cannot deadlock;
 * - free licences are taken with `for update skip locked`: a licence locked by another enrolment is
 *   never taken twice, and the unique index of live licences per membership is the last guard.
 * Licences go to the new members in request order (`standard` first, then `tutorat`). A member left
 * without one is removed again in this transaction (with the account created for it), so it was
 * never visible; with `atomic`, a shortage throws InsufficientLicences and everything rolls back.
 * Each enrolment records `learner.enrolled` in the same transaction.
 *
 * "An account exists" (status `active`, attached at once) means the person is on the platform: they
 * have logged in, or they are a non-invited member of some organisation. An account row that only
 * carries pending invitations is an invitation, not an account: enrolling it is `pending` again.
 */
export async function enrolLearners(
  db: DB,
  request: { orgId: string; candidates: EnrolmentCandidate[]; atomic: boolean },
): Promise<EnrolmentOutcome[]> {
  const { orgId, candidates, atomic } = request;
  const outcomes: (EnrolmentOutcome | null)[] = candidates.map(() => null);
  const firstIndexByEmail = new Map<string, number>();
  candidates.forEach((candidate, index) => {
    if (firstIndexByEmail.has(candidate.email)) outcomes[index] = { kind: 'duplicate' };
    else firstIndexByEmail.set(candidate.email, index);
  });
  const emails = [...firstIndexByEmail.keys()];
  if (emails.length === 0) return outcomes as EnrolmentOutcome[];

  await db.transaction().execute(async (trx) => {
    const created = await sql<{ id: string }>`
      insert into accounts (email)
      select email from unnest(${emails}::text[]) as requested(email) order by email
      on conflict (email) do nothing
      returning id`.execute(trx);
    const createdIds = new Set(created.rows.map((row) => row.id));
    const accounts = await sql<AccountRow>`
      select a.id, a.email, a.name,
        a.first_login_at is not null
          or exists (select 1 from memberships o where o.account_id = a.id and o.status <> 'invité') as has_account
      from accounts a where a.email = any(${emails}::text[])`.execute(trx);
    const accountByEmail = new Map(accounts.rows.map((account) => [account.email, account]));
    const isActive = (account: AccountRow) => !createdIds.has(account.id) && account.has_account;

    const active = accounts.rows.filter(isActive).map((account) => account.id);
    const pending = accounts.rows.filter((account) => !isActive(account)).map((account) => account.id);
    const inserted = await sql<NewMembershipRow>`
      insert into memberships (org_id, account_id, status, invited_at, joined_at)
      select ${orgId}::uuid, account_id, status,
        case when status = 'invité' then now() end, case when status = 'actif' then now() end
      from (
        select unnest(${active}::uuid[]) as account_id, 'actif' as status
        union all
        select unnest(${pending}::uuid[]), 'invité'
      ) as requested
      order by account_id
      on conflict (org_id, account_id) do nothing
      returning id, account_id, ${parisDate(sql`coalesce(joined_at, invited_at)`)} as inscrit_le`.execute(trx);
    const membershipByAccount = new Map(inserted.rows.map((membership) => [membership.account_id, membership]));

    // The new members, in request order: the order in which they get the licences.
    const newMembers = [...firstIndexByEmail].flatMap(([email, index]) => {
      const account = accountByEmail.get(email)!;
      const membership = membershipByAccount.get(account.id);
      if (!membership) {
        outcomes[index] = { kind: 'already_member' };
        return [];
      }
      return [{ index, account, membership }];
    });
    if (newMembers.length === 0) return;

    // Two atomic batches that skipped each other's locked licences could both come up short and
    // both be refused; atomic batches of one organisation therefore pick their licences in turn.
    // Single and best-effort enrolments use every licence they lock, so they need no turn.
    if (atomic) await takeAtomicPickingTurn(trx, orgId);
    // 'standard' sorts before 'tutorat': the index order is also the preference order.
    const licences = await sql<{ id: string; type: LicenceType }>`
      select id, type from licences
      where org_id = ${orgId} and status = 'disponible'
      order by type, created_at, id
      limit ${newMembers.length}
      for update skip locked`.execute(trx);
    if (atomic && licences.rows.length < newMembers.length) {
      throw new InsufficientLicences(newMembers.length, licences.rows.length);
    }
    const licensed = newMembers.slice(0, licences.rows.length);
    const unlicensed = newMembers.slice(licences.rows.length);
    if (unlicensed.length > 0) {
      await trx.deleteFrom('memberships').where('id', 'in', unlicensed.map((member) => member.membership.id)).execute();
      const orphans = unlicensed.map((member) => member.account.id).filter((id) => createdIds.has(id));
      if (orphans.length > 0) await trx.deleteFrom('accounts').where('id', 'in', orphans).execute();
      for (const member of unlicensed) outcomes[member.index] = { kind: 'no_licence' };
    }
    if (licensed.length === 0) return;

    await sql`
      update licences set status = 'attribuée', membership_id = assigned.membership_id, assigned_at = now()
      from unnest(${licences.rows.map((licence) => licence.id)}::uuid[], ${licensed.map((member) => member.membership.id)}::uuid[])
        as assigned(licence_id, membership_id)
      where licences.id = assigned.licence_id`.execute(trx);

    const enrolments = licensed.flatMap((member) =>
      candidates[member.index]!.programmes.map((programme) => ({ membership_id: member.membership.id, programme_id: programme.id })));
    if (enrolments.length > 0) {
      await trx.insertInto('programme_enrolments')
        .values(enrolments.map((enrolment) => ({ org_id: orgId, ...enrolment })))
        .execute();
    }

    for (const [position, { index, account, membership }] of licensed.entries()) {
      const status = isActive(account) ? 'active' : 'pending';
      const programmes = candidates[index]!.programmes.map((programme) => programme.slug);
      await recordEvent(trx, {
        orgId,
        type: 'learner.enrolled',
        data: { learner: { user_id: account.id, email: account.email, name: account.name }, status, programmes },
      });
      outcomes[index] = {
        kind: 'enrolled',
        status,
        member: {
          id: membership.id,
          user_id: account.id,
          email: account.email,
          nom: account.name,
          statut: status === 'active' ? 'actif' : 'invité',
          licence_type: licences.rows[position]!.type,
          programmes,
          inscrit_le: membership.inscrit_le,
        },
      };
    }
  });
  return outcomes as EnrolmentOutcome[];
}
