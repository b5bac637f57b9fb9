import { sql } from 'kysely';
import type { components } from '../codegen/openapi';
import type { DB } from './connection';
import { parisDate } from './render';
import type { LicenceType } from './tables';
import { type NewEvent, recordEvents } from './webhooks';

/** What the organisation allows, and its programmes among those a request names. */
export interface EnrolmentRules {
  allowedEmailDomains: string[];
  programmeIdsBySlug: Map<string, string>;
}

export async function loadEnrolmentRules(db: DB, orgId: string, slugs: string[]): Promise<EnrolmentRules> {
  const [organisation, programmes] = await Promise.all([
    db.selectFrom('organisations').select('allowed_email_domains').where('id', '=', orgId).executeTakeFirstOrThrow(),
    slugs.length === 0
      ? []
      : db
          .selectFrom('programmes')
          .select(['id', 'slug'])
          .where('org_id', '=', orgId)
          .where('slug', 'in', [...new Set(slugs)])
          .execute(),
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
  constructor(
    readonly needed: number,
    readonly available: number,
  ) {
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

interface Accounts {
  byEmail: Map<string, AccountRow>;
  /** Accounts this transaction created (removed again if their member gets no licence). */
  created: Set<string>;
}

interface NewMember {
  /** The candidate's position in the request. */
  index: number;
  account: AccountRow;
  membership: { id: string; account_id: string; inscrit_le: string };
}

/**
 * Enrols learners in the organisation, in one transaction, and answers one outcome per candidate in
 * the same order. The steps, in order: the accounts (found or created), the memberships (new ones
 * only: "already a member" otherwise), free licences taken, members without one removed again,
 * licences assigned, programme enrolments, and `learner.enrolled` recorded for each new member.
 *
 * Correctness under concurrency comes from the database alone:
 * - accounts and memberships are inserted with `on conflict do nothing` on their unique keys, so an
 *   email enrolled concurrently is created once and the other requests see "already a member";
 *   both are inserted in key order, so two overlapping batches cannot deadlock;
 * - free licences are taken with `for update skip locked`: a licence locked by another enrolment is
 *   never taken twice, and the unique index of live licences per membership is the last guard.
 * Licences go to the new members in request order (`standard` first, then `tutorat`). A member left
 * without one is removed again in this transaction (with the account created for it), so it was
 * never visible; with `atomic`, a shortage throws InsufficientLicences and everything rolls back.
 * The rules: docs/decisions.md#enrolment.
 */
export async function enrolLearners(
  db: DB,
  request: { orgId: string; candidates: EnrolmentCandidate[]; atomic: boolean },
): Promise<EnrolmentOutcome[]> {
  const { orgId, candidates, atomic } = request;
  const outcomes: (EnrolmentOutcome | null)[] = candidates.map(() => null);
  const firstIndexByEmail = firstOccurrences(candidates, outcomes);
  if (firstIndexByEmail.size === 0) return outcomes as EnrolmentOutcome[];

  await db.transaction().execute(async (trx) => {
    const accounts = await findOrCreateAccounts(trx, [...firstIndexByEmail.keys()]);
    const newMembers = await addMemberships(trx, orgId, accounts, firstIndexByEmail, outcomes);
    if (newMembers.length === 0) return;
    const licences = await takeFreeLicences(trx, orgId, newMembers.length, atomic);
    const licensed = await keepLicensedMembers(trx, newMembers, licences.length, accounts, outcomes);
    if (licensed.length === 0) return;
    await assignLicences(trx, licences, licensed);
    await enrolInProgrammes(trx, orgId, licensed, candidates);
    await recordEnrolments(trx, orgId, licensed, licences, candidates, accounts, outcomes);
  });
  return outcomes as EnrolmentOutcome[];
}

/** The same email later in the request is a duplicate (an outcome of its own); the first occurrences by email. */
function firstOccurrences(candidates: EnrolmentCandidate[], outcomes: (EnrolmentOutcome | null)[]): Map<string, number> {
  const firstIndexByEmail = new Map<string, number>();
  candidates.forEach((candidate, index) => {
    if (firstIndexByEmail.has(candidate.email)) outcomes[index] = { kind: 'duplicate' };
    else firstIndexByEmail.set(candidate.email, index);
  });
  return firstIndexByEmail;
}

/**
 * The accounts of these emails, created when missing. "An account exists" (status `active`,
 * attached at once) means the person is on the platform: they have logged in, or they are a
 * non-invited member of some organisation. An account row that only carries pending invitations is
 * an invitation, not an account: enrolling it is `pending` again.
 */
async function findOrCreateAccounts(trx: DB, emails: string[]): Promise<Accounts> {
  const created = await sql<{ id: string }>`
    insert into accounts (email)
    select email from unnest(${emails}::text[]) as requested(email) order by email
    on conflict (email) do nothing
    returning id`.execute(trx);
  const accounts = await sql<AccountRow>`
    select a.id, a.email, a.name,
      a.first_login_at is not null
        or exists (select 1 from memberships o where o.account_id = a.id and o.status <> 'invité') as has_account
    from accounts a where a.email = any(${emails}::text[])`.execute(trx);
  return {
    byEmail: new Map(accounts.rows.map((account) => [account.email, account])),
    created: new Set(created.rows.map((row) => row.id)),
  };
}

/** Whether enrolling this account attaches a learner at once (`active`) rather than inviting one (`pending`). */
function isActive(account: AccountRow, accounts: Accounts): boolean {
  return !accounts.created.has(account.id) && account.has_account;
}

/** Memberships for the accounts not yet in the organisation, in request order; the others are "already a member". */
async function addMemberships(
  trx: DB,
  orgId: string,
  accounts: Accounts,
  firstIndexByEmail: Map<string, number>,
  outcomes: (EnrolmentOutcome | null)[],
): Promise<NewMember[]> {
  const all = [...accounts.byEmail.values()];
  const active = all.filter((account) => isActive(account, accounts)).map((account) => account.id);
  const pending = all.filter((account) => !isActive(account, accounts)).map((account) => account.id);
  const inserted = await sql<NewMember['membership']>`
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
  return [...firstIndexByEmail].flatMap(([email, index]) => {
    const account = accounts.byEmail.get(email)!;
    const membership = membershipByAccount.get(account.id);
    if (!membership) {
      outcomes[index] = { kind: 'already_member' };
      return [];
    }
    return [{ index, account, membership }];
  });
}

/**
 * Up to `needed` free licences, locked, `standard` first ('standard' sorts before 'tutorat'). Two
 * atomic batches that skipped each other's locked licences could both come up short and both be
 * refused; atomic batches of one organisation therefore pick their licences in turn, and a shortage
 * refuses the whole batch. Single and best-effort enrolments use every licence they lock.
 */
async function takeFreeLicences(trx: DB, orgId: string, needed: number, atomic: boolean): Promise<{ id: string; type: LicenceType }[]> {
  if (atomic) await takeAtomicPickingTurn(trx, orgId);
  const licences = await sql<{ id: string; type: LicenceType }>`
    select id, type from licences
    where org_id = ${orgId} and status = 'disponible'
    order by type, created_at, id
    limit ${needed}
    for update skip locked`.execute(trx);
  if (atomic && licences.rows.length < needed) throw new InsufficientLicences(needed, licences.rows.length);
  return licences.rows;
}

/** The first members in request order get the licences; the others are removed again, with the accounts created for them. */
async function keepLicensedMembers(
  trx: DB,
  members: NewMember[],
  licences: number,
  accounts: Accounts,
  outcomes: (EnrolmentOutcome | null)[],
): Promise<NewMember[]> {
  const unlicensed = members.slice(licences);
  if (unlicensed.length > 0) {
    await trx
      .deleteFrom('memberships')
      .where(
        'id',
        'in',
        unlicensed.map((member) => member.membership.id),
      )
      .execute();
    const orphans = unlicensed.map((member) => member.account.id).filter((id) => accounts.created.has(id));
    if (orphans.length > 0) await trx.deleteFrom('accounts').where('id', 'in', orphans).execute();
    for (const member of unlicensed) outcomes[member.index] = { kind: 'no_licence' };
  }
  return members.slice(0, licences);
}

async function assignLicences(trx: DB, licences: { id: string }[], members: NewMember[]): Promise<void> {
  await sql`
    update licences set status = 'attribuée', membership_id = assigned.membership_id, assigned_at = now()
    from unnest(${licences.slice(0, members.length).map((licence) => licence.id)}::uuid[], ${members.map((member) => member.membership.id)}::uuid[])
      as assigned(licence_id, membership_id)
    where licences.id = assigned.licence_id`.execute(trx);
}

async function enrolInProgrammes(trx: DB, orgId: string, members: NewMember[], candidates: EnrolmentCandidate[]): Promise<void> {
  const enrolments = members.flatMap((member) =>
    candidates[member.index]!.programmes.map((programme) => ({
      org_id: orgId,
      membership_id: member.membership.id,
      programme_id: programme.id,
    })),
  );
  if (enrolments.length > 0) await trx.insertInto('programme_enrolments').values(enrolments).execute();
}

/** `learner.enrolled` for each new member, in the same transaction, and its outcome (the contract's `member`). */
async function recordEnrolments(
  trx: DB,
  orgId: string,
  members: NewMember[],
  licences: { type: LicenceType }[],
  candidates: EnrolmentCandidate[],
  accounts: Accounts,
  outcomes: (EnrolmentOutcome | null)[],
): Promise<void> {
  const events: NewEvent<'learner.enrolled'>[] = [];
  for (const [position, { index, account, membership }] of members.entries()) {
    const status = isActive(account, accounts) ? 'active' : 'pending';
    const programmes = candidates[index]!.programmes.map((programme) => programme.slug);
    events.push({
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
        licence_type: licences[position]!.type,
        programmes,
        inscrit_le: membership.inscrit_le,
      },
    };
  }
  // In one call: the batch's deliveries make one job.
  await recordEvents(trx, events);
}
