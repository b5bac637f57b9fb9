import { gatherActivityReport } from './activity-report';
import { findKeyAndCountRequests } from './api-keys';
import type { DB } from './connection';
import { findLearner } from './learners';

/** An organisation, a learner and a key hash that no row has: the warm-up reads nothing and writes nothing. */
const nobody = '00000000-0000-0000-0000-000000000000';
const noKeyHash = Buffer.alloc(32);

/**
 * Opens `connections` connections of the pool at once and runs on each the statements of a
 * request's first steps: the key and its count, the learner, a report's gathering (one statement per
 * list resource). A new connection costs its first request its opening and, on PostgreSQL's side,
 * the loading of the tables' and indexes' descriptions and statistics as its statements are first
 * planned. Without it, the first report after a start waited 5.5 ms for its key against 3.5, and the
 * second one's learner lookup took 8-12 ms against 3-4 (issue 17). Asked for an organisation that
 * does not exist, each statement is planned as a request's and finds nothing.
 */
export async function warmUpConnections(db: DB, connections: number, rateLimit: { limit: number; windowSeconds: number }): Promise<void> {
  // Every lease is asked for before any is given back (each needs the database to answer first),
  // so the pool lends `connections` different connections, opening those it lacks.
  await Promise.all(
    Array.from({ length: connections }, () =>
      db.connection().execute(async (connection) => {
        await findKeyAndCountRequests(connection, noKeyHash, 1, rateLimit.limit, rateLimit.windowSeconds);
        await findLearner(connection, nobody, { email: 'prechauffage@invalid' });
        await gatherActivityReport(connection, {
          orgId: nobody,
          orgName: '',
          learner: { membershipId: nobody, userId: nobody, email: 'prechauffage@invalid' },
          year: 2000,
          programmeId: null,
          generatedAt: '',
        });
      }),
    ),
  );
}
