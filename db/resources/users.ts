import { sql } from 'kysely';
import type { components } from '../../codegen/openapi';
import { parisDate, parisDay } from '../render';
import { type ListResourceDefinition, typedColumns } from './definition';

/** A row as the contract defines it (generated from openapi.yaml): columns are checked against it. */
export type UserRow = components['schemas']['UserRow'];

/** The enrolment date of a membership: joined, else invited. Indexed as is (memberships_org_listing_idx). */
export const membershipDate = sql<Date>`coalesce(m.joined_at, m.invited_at)`;

export const usersResource: ListResourceDefinition<'listUsers'> = {
  operationId: 'listUsers',
  name: 'users',
  ...typedColumns<UserRow>({
    nom: 'text',
    email: 'text',
    statut: 'text',
    licence_type: 'text',
    licence_statut: 'text',
    inscrit_le: 'date',
  }),
  filtersByYear: false,
  filtersByUpdatedSince: true,
  filtersByProgramme: false,
  select(db, filter) {
    let query = db
      .selectFrom('memberships as m')
      .select((eb) => {
        // The learner's live licence if any, else the latest one they held (revoked). Scalar
        // subqueries, not a join: PostgreSQL evaluates them only for the rows of the page, and
        // the count drops them.
        const currentLicence = (column: 'type' | 'status') =>
          eb
            .selectFrom('licences as l')
            .select(`l.${column}`)
            .whereRef('l.membership_id', '=', 'm.id')
            .where('l.org_id', '=', filter.orgId)
            .orderBy(sql`l.status in ('attribuée', 'activée')`, 'desc')
            .orderBy('l.assigned_at', (order) => order.desc().nullsLast())
            .orderBy('l.id')
            .limit(1);
        return [
          'm.name as nom',
          'm.email as email',
          'm.status as statut',
          currentLicence('type').as('licence_type'),
          currentLicence('status').as('licence_statut'),
          parisDate(membershipDate).as('inscrit_le'),
        ];
      })
      .where('m.org_id', '=', filter.orgId);
    if (filter.membershipId) query = query.where('m.id', '=', filter.membershipId);
    if (filter.updatedSince) query = query.where(parisDay(membershipDate), '>=', filter.updatedSince);
    return query.orderBy(parisDay(membershipDate)).orderBy('m.email') as never;
  },
  // The memberships alone, in order: memberships_org_listing_idx counts them and places a page.
  keys(db, filter) {
    let query = db.selectFrom('memberships as m').select('m.id').where('m.org_id', '=', filter.orgId);
    if (filter.membershipId) query = query.where('m.id', '=', filter.membershipId);
    if (filter.updatedSince) query = query.where(parisDay(membershipDate), '>=', filter.updatedSince);
    return query.orderBy(parisDay(membershipDate)).orderBy('m.email');
  },
  // A deep page takes its learners' licences for its own rows only, not for those it skips.
  pageKey: 'm.id',
};
