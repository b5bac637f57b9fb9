import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { createDb, type DB } from '../../db/connection';
import { migrateToLatest, migrations } from '../../db/migrate';
import { learnersResource } from '../../db/resources/learners';
import { seedOrganisation } from '../../src/local/seed/generate';
import { createKey } from '../support/factories';
import { listResourceNames } from '../support/list-resources';
import { projectRoot } from '../support/server-process';
import { benchPostgresServer, percentile, report, startServerProcess } from './support';

/**
 * A request costs what its organisation holds, not what the platform holds. One organisation of
 * 10,000 generated learners alone in its database, and the same organisation (same id, same seed, the very same rows) beside 7 others of the same size in another database; one
 * server on each, requests sent to each in turn, so that a busy moment of the shared machine falls
 * on both sides. Every list resource's first and deep 1,000-row pages, its count (a one-row page),
 * its CSV and xlsx exports, the summary and one learner's activity report: p50 beside the others
 * within 1.2x of alone. And `learners`' 1,000-row pages under 150 ms at the median, first and deep.
 *
 * The two databases are seeded once and kept (on the persistent embedded PostgreSQL under
 * .data/bench, or DATABASE_URL's server): a run reuses them while the migrations, the generator and
 * the seeding below are the same, and seeds them again otherwise (about 15 minutes on 2 cores).
 * Seedings of other versions are dropped (each holds gigabytes) unless BENCH_KEEP_OTHER_SEEDINGS=1,
 * for measuring two versions in turn on one server.
 */
const learners = Number(process.env.BENCH_LEARNERS ?? 10_000);
const otherOrganisations = 7;
const pageSamples = Number(process.env.BENCH_SAMPLES ?? 40);
const exportSamples = Number(process.env.BENCH_EXPORT_SAMPLES ?? 8);
const year = 2026;
/** The generated data ends here: the same rows on every day the bench runs. */
const seededNow = new Date('2026-11-22T09:00:00Z');
const cap = 100_000;

/** A fixed organisation id from a name: the same on every run, in no particular order. */
function organisationId(name: string): string {
  const hex = createHash('sha256').update(`tenants bench: ${name}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
const measured = { id: organisationId('measured'), name: 'Organisme mesuré', seed: 1 };
const others = Array.from({ length: otherOrganisations }, (_, i) => ({
  id: organisationId(`other ${i + 1}`),
  name: `Autre organisme ${i + 1}`,
  seed: i + 2,
}));

/**
 * What the seeded rows depend on: the migrations' code, the generator's and this seeding. A kept
 * database is reused only when its fingerprint (its comment) is this one.
 */
function seedFingerprint(): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify({ migrations: Object.keys(migrations), learners, year, seededNow, measured, others }));
  for (const folder of [path.join(projectRoot, 'db', 'migrations'), path.join(projectRoot, 'src', 'local', 'seed')]) {
    for (const file of readdirSync(folder).sort()) hash.update(readFileSync(path.join(folder, file)));
  }
  return hash.digest('hex').slice(0, 16);
}

const fingerprint = seedFingerprint();
const databaseNames = { alone: `tenants_alone_${fingerprint}`, beside: `tenants_beside_${fingerprint}` };
const server = await benchPostgresServer('tenants');
const admin = new pg.Client({ connectionString: server.serverUrl });
await admin.connect();
const databaseUrl = (name: string) => {
  const url = new URL(server.serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
};

async function seeded(name: string): Promise<boolean> {
  const found = await admin.query<{ fingerprint: string | null }>(
    `select shobj_description(oid, 'pg_database') as fingerprint from pg_database where datname = $1`,
    [name],
  );
  return found.rows[0]?.fingerprint === fingerprint;
}

async function seedInto(db: DB, organisation: { id: string; name: string; seed: number }): Promise<number> {
  const started = performance.now();
  await db.insertInto('organisations').values({ id: organisation.id, name: organisation.name }).execute();
  await seedOrganisation(db, { orgId: organisation.id, learners, seed: organisation.seed, year, now: seededNow });
  return (performance.now() - started) / 1000;
}

/** Both databases, seeded when they are not there yet; older seedings of this bench are dropped (each holds gigabytes). */
async function prepareDatabases(): Promise<void> {
  const stale = await admin.query<{ datname: string }>(
    `select datname from pg_database where datname like 'tenants\\_%' and datname not in ($1, $2)`,
    [databaseNames.alone, databaseNames.beside],
  );
  for (const { datname } of process.env.BENCH_KEEP_OTHER_SEEDINGS === '1' ? [] : stale.rows) {
    process.stdout.write(`dropping ${datname}, seeded for other migrations or another generator\n`);
    await admin.query(`drop database ${datname} with (force)`);
  }
  if (!(await seeded(databaseNames.alone))) {
    await admin.query(`drop database if exists ${databaseNames.alone} with (force)`);
    await admin.query(`create database ${databaseNames.alone}`);
    const db = createDb(databaseUrl(databaseNames.alone), { poolSize: 2 });
    await migrateToLatest(db);
    const seconds = await seedInto(db, measured);
    await sql`vacuum analyze`.execute(db);
    await db.destroy();
    await admin.query(`comment on database ${databaseNames.alone} is '${fingerprint}'`);
    report(`seed the organisation alone (${learners.toLocaleString('en')} learners)`, `${seconds.toFixed(0)} s`);
  }
  if (!(await seeded(databaseNames.beside))) {
    await admin.query(`drop database if exists ${databaseNames.beside} with (force)`);
    // The same organisation's very rows, then the others after them.
    await admin.query(`create database ${databaseNames.beside} template ${databaseNames.alone}`);
    const db = createDb(databaseUrl(databaseNames.beside), { poolSize: 2 });
    let seconds = 0;
    for (const organisation of others) seconds += await seedInto(db, organisation);
    await sql`vacuum analyze`.execute(db);
    await db.destroy();
    await admin.query(`comment on database ${databaseNames.beside} is '${fingerprint}'`);
    report(`seed ${otherOrganisations} other organisations beside it`, `${seconds.toFixed(0)} s`);
  }
}

await prepareDatabases();

/** A read key of the measured organisation in a database (a new one each run: keys are stored hashed). */
async function readKeyIn(name: string): Promise<string> {
  const db = createDb(databaseUrl(name), { poolSize: 1 });
  try {
    return (await createKey(db, measured.id, ['read'])).key;
  } finally {
    await db.destroy();
  }
}

/** The learner of the report: the busiest of the year (most logins, attempts and tutoring sessions). */
async function busiestLearner(): Promise<string> {
  const db = createDb(databaseUrl(databaseNames.alone), { poolSize: 1 });
  try {
    const rows = await learnersResource
      .select(db, { orgId: measured.id, year, updatedSince: null, membershipId: null, programmeId: null })
      .execute();
    const load = (row: (typeof rows)[number]) => row.connexions + row.evaluations_total + row.seances_tutorat;
    return rows.sort((a, b) => load(b) - load(a))[0]!.email;
  } finally {
    await db.destroy();
  }
}

const agent = new http.Agent({ keepAlive: true });

/** One request's whole answer, read through node:http; it must be a 200. */
function get(url: string, key: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers: { authorization: `Bearer ${key}` }, agent }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          response.statusCode === 200
            ? resolve(Buffer.concat(chunks))
            : reject(new Error(`${url}: ${response.statusCode} ${Buffer.concat(chunks).toString('utf8').slice(0, 300)}`)),
        );
      })
      .on('error', reject);
  });
}

interface Side {
  baseUrl: string;
  key: string;
}

/**
 * One request on both sides in turn (which goes first alternates), `samples` times each: the p50 of
 * each side's answers, and how many failed (a statement past the server's time limit answers 503).
 */
async function alternating(pathAndQuery: string, alone: Side, beside: Side, samples: number) {
  const sides = { alone, beside };
  const times = { alone: [] as number[], beside: [] as number[] };
  const failed = { alone: 0, beside: 0 };
  for (let i = -1; i < samples; i++) {
    const order = i % 2 === 0 ? (['alone', 'beside'] as const) : (['beside', 'alone'] as const);
    for (const side of order) {
      const start = performance.now();
      try {
        await get(`${sides[side].baseUrl}${pathAndQuery}`, sides[side].key);
        // The first round warms both sides up.
        if (i >= 0) times[side].push(performance.now() - start);
      } catch (error) {
        if (i >= 0) failed[side] += 1;
        if (failed[side] === 1) process.stdout.write(`  (${side}: ${(error as Error).message.slice(0, 200)})\n`);
      }
    }
  }
  return { alone: percentile(times.alone, 50), beside: percentile(times.beside, 50), failed };
}

const [aloneKey, besideKey, reportEmail] = await Promise.all([
  readKeyIn(databaseNames.alone),
  readKeyIn(databaseNames.beside),
  busiestLearner(),
]);
const settings = { RATE_LIMIT_PER_MINUTE: '100000000', LOG_LEVEL: 'warn' };
const [aloneServer, besideServer] = await Promise.all([
  startServerProcess(databaseUrl(databaseNames.alone), settings),
  startServerProcess(databaseUrl(databaseNames.beside), settings),
]);
const alone: Side = { baseUrl: aloneServer.baseUrl, key: aloneKey };
const beside: Side = { baseUrl: besideServer.baseUrl, key: besideKey };

interface Line {
  request: string;
  alone: number;
  beside: number;
  failed: { alone: number; beside: number };
}
const lines: Line[] = [];
const learnersPages: Line[] = [];

process.stdout.write(
  `The same organisation of ${learners.toLocaleString('en')} learners alone, and beside ${otherOrganisations} others of the same size (year ${year}); ${pageSamples} samples per side of each page, ${exportSamples} of each export\n`,
);
try {
  for (const name of listResourceNames) {
    const first = JSON.parse((await get(`${alone.baseUrl}/${name}?limit=1&year=${year}`, alone.key)).toString('utf8')) as {
      pagination: { total: number };
    };
    const deepOffset = Math.max(0, Math.min(cap, first.pagination.total) - 1000);
    const requests = [
      { request: `${name} first page`, query: `limit=1000&offset=0`, samples: pageSamples },
      { request: `${name} page at ${deepOffset.toLocaleString('en')}`, query: `limit=1000&offset=${deepOffset}`, samples: pageSamples },
      { request: `${name} count (a 1-row page)`, query: 'limit=1', samples: pageSamples },
      { request: `${name} CSV`, query: 'format=csv', samples: exportSamples },
      { request: `${name} xlsx`, query: 'format=xlsx', samples: exportSamples },
    ];
    for (const { request, query, samples } of requests) {
      const p50 = await alternating(`/${name}?${query}&year=${year}`, alone, beside, samples);
      const line = { request, ...p50 };
      lines.push(line);
      if (name === 'learners' && query.startsWith('limit=1000')) learnersPages.push(line);
      process.stdout.write(`  ${request}: ${p50.alone.toFixed(1)} / ${p50.beside.toFixed(1)} ms\n`);
    }
  }
  for (const { request, query } of [
    { request: 'summary', query: '/summary' },
    { request: 'activity report (busiest learner)', query: `/activity-report?email=${encodeURIComponent(reportEmail)}&year=${year}` },
  ]) {
    const p50 = await alternating(query, alone, beside, pageSamples);
    lines.push({ request, ...p50 });
    process.stdout.write(`  ${request}: ${p50.alone.toFixed(1)} / ${p50.beside.toFixed(1)} ms\n`);
  }
} finally {
  agent.destroy();
  await Promise.all([aloneServer.stop(), besideServer.stop()]);
  await admin.end();
  await server.stop();
}

/** The failed answers of a line, if any: they are not in its p50. */
const failures = (line: Line) =>
  line.failed.alone + line.failed.beside === 0 ? '' : ` failed: ${line.failed.alone} alone, ${line.failed.beside} beside`;
const width = Math.max(...lines.map((line) => line.request.length));
process.stdout.write(`\n| ${'request'.padEnd(width)} | alone p50 | beside 7 others p50 | ratio |\n`);
process.stdout.write(`|${'-'.repeat(width + 2)}|----------:|--------------------:|------:|\n`);
for (const line of lines) {
  const ratio = line.beside / line.alone;
  process.stdout.write(
    `| ${line.request.padEnd(width)} | ${`${line.alone.toFixed(1)} ms`.padStart(9)} | ${`${line.beside.toFixed(1)} ms`.padStart(19)} | ${ratio.toFixed(2).padStart(5)} |${ratio > 1.2 ? ' over 1.2x' : ''}${failures(line)}\n`,
  );
}
process.stdout.write('\n');
const worst = lines.reduce((a, b) => (b.beside / b.alone > a.beside / a.alone ? b : a));
report('worst ratio beside others / alone', `${(worst.beside / worst.alone).toFixed(2)} (${worst.request})`, {
  text: '<= 1.2 everywhere',
  met: lines.every((line) => line.beside / line.alone <= 1.2 && failures(line) === ''),
});
for (const line of learnersPages) {
  const slowest = Math.max(line.alone, line.beside);
  report(`${line.request} p50 (the slower side)`, `${slowest.toFixed(0)} ms`, { text: '< 150 ms', met: slowest < 150 });
}
