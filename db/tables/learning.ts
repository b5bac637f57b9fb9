import type { ColumnType, Generated } from 'kysely';

/** A timestamp the database fills in when it is not given. */
type GeneratedTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;

export interface ProgrammesTable {
  id: Generated<string>;
  org_id: string;
  slug: string;
  title: string;
  created_at: GeneratedTimestamp;
}

export interface ProgrammeEnrolmentsTable {
  id: Generated<string>;
  org_id: string;
  membership_id: string;
  programme_id: string;
  enrolled_at: GeneratedTimestamp;
}

/** Tables of the learning data: programmes and what learners do in them. */
export interface LearningTables {
  programmes: ProgrammesTable;
  programme_enrolments: ProgrammeEnrolmentsTable;
}
