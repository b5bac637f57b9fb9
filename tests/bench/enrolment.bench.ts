import { sql } from 'kysely';
import { addLicences } from '../../db/organisations';
import { createOrgWithKeys } from '../support/factories';
import { openBenchDatabase, percentile, report, startServerProcess } from './support';

/**
 * POST /users against a real server process. Latency of one enrolment and of a 50-row
 * batch (requests one after another), then enrolments per second under 16 concurrent clients,
 * single and batched, until the licences run out. Targets: a batch of 50 under 300 ms at p99; no
 * answer but 201/200 and, once the licences are gone, the expected 409; never more enrolments than
 * licences.
 */
const singleSamples = 300;
const batchSamples = 60;
const batchSize = 50;
const clients = 16;
const loadSeconds = 10;

const database = await openBenchDatabase('bench_enrolment');
const server = await startServerProcess(database.url, { RATE_LIMIT_PER_MINUTE: '100000000', LOG_LEVEL: 'warn' });

let sequence = 0;
const nextEmail = () => {
  sequence += 1;
  return `apprenant${sequence}@banc.fr`;
};

async function enrol(key: string, payload: unknown): Promise<{ status: number; ms: number; body: any }> {
  const started = performance.now();
  const response = await fetch(`${server.baseUrl}/users`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(payload),
  });
  const body = await response.json();
  return { status: response.status, ms: performance.now() - started, body };
}

const batch = () => ({ users: Array.from({ length: batchSize }, () => ({ email: nextEmail() })) });

async function newOrg(name: string, licences: number) {
  const org = await createOrgWithKeys(database.db, { name });
  await addLicences(database.db, org.orgId, 'standard', licences);
  return org;
}

/** Closed-loop clients sending until the deadline or the request budget; every answer counted by status. */
async function underLoad(key: string, payload: () => unknown, until: { seconds?: number; requests?: number }) {
  const statuses = new Map<number, number>();
  let enrolled = 0;
  let budget = until.requests ?? Infinity;
  const started = performance.now();
  const deadline = started + (until.seconds ?? Infinity) * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < deadline && budget > 0) {
        budget -= 1;
        const answer = await enrol(key, payload()).catch(() => ({ status: 0, ms: 0, body: null }));
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        if (answer.status === 201) enrolled += 1;
        if (answer.status === 200) enrolled += answer.body.summary.enrolled;
      }
    }),
  );
  return { statuses, enrolled, seconds: (performance.now() - started) / 1000 };
}

const describeStatuses = (statuses: Map<number, number>) =>
  [...statuses]
    .sort()
    .map(([status, n]) => `${status}×${n}`)
    .join(', ');

async function assignedLicences(orgId: string): Promise<number> {
  const { rows } = await sql<{
    n: number;
  }>`select count(*)::int as n from licences where org_id = ${orgId} and status = 'attribuée'`.execute(database.db);
  return rows[0]!.n;
}

try {
  // Latency, one request at a time, after a warm-up.
  const latency = await newOrg('Latence', singleSamples + 20 + (batchSamples + 5) * batchSize);
  for (let i = 0; i < 20; i += 1) await enrol(latency.writeKey, { email: nextEmail() });
  for (let i = 0; i < 5; i += 1) await enrol(latency.writeKey, batch());
  const single: number[] = [];
  for (let i = 0; i < singleSamples; i += 1) {
    const answer = await enrol(latency.writeKey, { email: nextEmail() });
    if (answer.status !== 201) throw new Error(`single enrolment: ${answer.status} ${JSON.stringify(answer.body)}`);
    single.push(answer.ms);
  }
  const bulk: number[] = [];
  for (let i = 0; i < batchSamples; i += 1) {
    const answer = await enrol(latency.writeKey, batch());
    if (answer.status !== 200 || answer.body.summary.enrolled !== batchSize)
      throw new Error(`batch: ${answer.status} ${JSON.stringify(answer.body)}`);
    bulk.push(answer.ms);
  }
  process.stdout.write(
    `POST /users, one request at a time (${singleSamples} single enrolments, ${batchSamples} batches of ${batchSize})\n`,
  );
  report('single enrolment: p50, p99', `p50 ${percentile(single, 50).toFixed(1)} ms, p99 ${percentile(single, 99).toFixed(1)} ms`);
  const bulkP99 = percentile(bulk, 99);
  report(`batch of ${batchSize}: p50, p99`, `p50 ${percentile(bulk, 50).toFixed(1)} ms, p99 ${bulkP99.toFixed(1)} ms`, {
    text: 'p99 < 300 ms',
    met: bulkP99 < 300,
  });

  // Throughput, with licences to spare.
  process.stdout.write(`\nPOST /users, ${clients} concurrent clients, ${loadSeconds} s each\n`);
  for (const [label, licences, payload] of [
    ['single enrolments', 5000, () => ({ email: nextEmail() })],
    [`batches of ${batchSize}`, 50000, batch],
  ] as const) {
    const org = await newOrg(label, licences);
    const result = await underLoad(org.writeKey, payload, { seconds: loadSeconds });
    const unexpected = [...result.statuses].filter(([status]) => status !== 200 && status !== 201).reduce((sum, [, n]) => sum + n, 0);
    report(`${label}: enrolments/s`, `${Math.round(result.enrolled / result.seconds)} /s (answers: ${describeStatuses(result.statuses)})`);
    report(`${label}: errors`, String(unexpected), { text: '0', met: unexpected === 0 });
  }

  // Until the licences run out: exactly as many enrolments as licences, the rest 409, nothing else.
  const licences = 300;
  const requests = 640;
  const scarce = await newOrg('Pénurie', licences);
  const result = await underLoad(scarce.writeKey, () => ({ email: nextEmail() }), { requests });
  const assigned = await assignedLicences(scarce.orgId);
  const expected = result.statuses.get(201) === licences && result.statuses.get(409) === requests - licences && assigned === licences;
  process.stdout.write(`\n${requests} single enrolments, ${clients} concurrent clients, ${licences} licences\n`);
  report('answers; licences assigned', `${describeStatuses(result.statuses)}; ${assigned}`, {
    text: `201×${licences}, 409×${requests - licences}, ${licences} assigned`,
    met: expected,
  });
} finally {
  await server.stop();
  await database.close();
}
