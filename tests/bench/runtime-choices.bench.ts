import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import zlib from 'node:zlib';
import { sql } from 'kysely';
import { gatherActivityReport } from '../../db/activity-report';
import { keyAndCountStatement } from '../../db/api-keys';
import { runPrepared } from '../../db/connection';
import { findLearner } from '../../db/learners';
import { currentParisYear } from '../../db/paris-time';
import { hashApiKey } from '../../src/api-keys';
import { seedOrganisation } from '../../src/local/seed/generate';
import { createRenderPool } from '../../src/pdf/render-pool';
import { createOrgWithKeys } from '../support/factories';
import type { ServerProcess } from '../support/server-process';
import { busiestLearner, openBenchDatabase, percentile, report, startServerProcess } from './support';

/**
 * What each runtime choice pays, measured in one run with and without it (docs/performance.md):
 * - the V8 and malloc settings a start line could carry, each on a server of its own beside a
 *   plain `node` one, the servers taking turns: 1,000-row pages (p50, p99), a CSV export of
 *   quiz-answers (time, the server's peak memory during it), and an activity report after 20 s
 *   without a request (V8's memory reducer runs after 8 s idle);
 * - the key's statement, prepared under a name or parsed and planned on every request;
 * - a render worker's warm-up: the first report of a pool, with and without it;
 * - the workbook's deflate level: 1 against zlib's default, on sheet XML shaped like an export's.
 */
const learners = Number(process.env.BENCH_LEARNERS ?? 3000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const pagesPerRound = 60;
const pauseSeconds = 20;
const year = currentParisYear() - 1;

interface Variant {
  name: string;
  nodeArguments: string[];
  environment: Record<string, string>;
}
const variants: Variant[] = [
  { name: 'plain node', nodeArguments: [], environment: {} },
  { name: '--no-memory-reducer', nodeArguments: ['--no-memory-reducer'], environment: {} },
  {
    name: '--max-semi-space-size=4 --initial-old-space-size=64',
    nodeArguments: ['--max-semi-space-size=4', '--initial-old-space-size=64'],
    environment: {},
  },
  { name: 'MALLOC_ARENA_MAX=2', nodeArguments: [], environment: { MALLOC_ARENA_MAX: '2' } },
  {
    name: 'all three',
    nodeArguments: ['--no-memory-reducer', '--max-semi-space-size=4', '--initial-old-space-size=64'],
    environment: { MALLOC_ARENA_MAX: '2' },
  },
];

const database = await openBenchDatabase('bench_runtime_choices');
const org = await createOrgWithKeys(database.db, { name: 'Organisme du banc' });
await seedOrganisation(database.db, { orgId: org.orgId, learners, seed: 7 });
await sql`analyze`.execute(database.db);
const heaviest = await busiestLearner(database.db, org.orgId, year);
const headers = { authorization: `Bearer ${org.readKey}` };

/** Resident memory of a process now, in MB (Linux). */
function residentMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

/** Milliseconds of one GET, which must answer 200, and the server's highest resident memory meanwhile. */
async function timed(server: ServerProcess, path: string): Promise<{ ms: number; peakMb: number }> {
  const pid = server.child.pid!;
  let peakMb = residentMb(pid);
  const sampler = setInterval(() => {
    peakMb = Math.max(peakMb, residentMb(pid));
  }, 10);
  try {
    const start = performance.now();
    const response = await fetch(`${server.baseUrl}${path}`, { headers });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`${path}: ${response.status}`);
    return { ms: performance.now() - start, peakMb: Math.max(peakMb, residentMb(pid)) };
  } finally {
    clearInterval(sampler);
  }
}

interface Figures {
  pages: number[];
  exports: number[];
  exportPeaksMb: number[];
  afterPause: number[];
  idleMb: number[];
}

async function compareStartSettings(): Promise<void> {
  const servers = await Promise.all(
    variants.map((variant) =>
      startServerProcess(database.url, { RATE_LIMIT_PER_MINUTE: '100000000', ...variant.environment }, undefined, variant.nodeArguments),
    ),
  );
  const figures: Figures[] = variants.map(() => ({ pages: [], exports: [], exportPeaksMb: [], afterPause: [], idleMb: [] }));
  const reportPath = `/activity-report?email=${encodeURIComponent(heaviest.email)}&year=${year}`;
  try {
    for (const server of servers) {
      for (let i = 0; i < 10; i++) await timed(server, `/logins?limit=1000&year=${year}`);
      await timed(server, reportPath);
    }
    for (let round = 0; round < rounds; round++) {
      // Each round starts with another variant, so that none always comes first after the pause.
      const order = variants.map((_, index) => (index + round) % variants.length);
      for (const index of order) {
        for (let page = 0; page < pagesPerRound; page++) {
          const offset = (page % 6) * 1000;
          figures[index]!.pages.push((await timed(servers[index]!, `/logins?limit=1000&offset=${offset}&year=${year}`)).ms);
        }
        const exported = await timed(servers[index]!, `/quiz-answers?format=csv&year=${year}`);
        figures[index]!.exports.push(exported.ms);
        figures[index]!.exportPeaksMb.push(exported.peakMb);
      }
      await sleep(pauseSeconds * 1000);
      for (const index of order) {
        figures[index]!.idleMb.push(residentMb(servers[index]!.child.pid!));
        figures[index]!.afterPause.push((await timed(servers[index]!, reportPath)).ms);
      }
    }
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
  const ms = (values: number[], p: number) => `${Math.round(percentile(values, p))} ms`;
  const mb = (values: number[]) => `${Math.round(Math.max(...values))} MB`;
  const range = (values: number[]) => values.map((value) => Math.round(value)).join(', ');
  process.stdout.write(
    `Start settings: ${learners} learners, ${rounds} rounds; each round ${pagesPerRound} pages of 1,000 logins, one CSV export of quiz-answers, ${pauseSeconds} s idle, one report\n`,
  );
  for (const [index, variant] of variants.entries()) {
    const own = figures[index]!;
    report(`${variant.name}: pages p50, p99`, `${ms(own.pages, 50)}, ${ms(own.pages, 99)}`);
    report(`${variant.name}: CSV export (ms), its peak memory`, `${range(own.exports)}; peak ${mb(own.exportPeaksMb)}`);
    report(
      `${variant.name}: report after ${pauseSeconds} s idle (ms), memory idle`,
      `${range(own.afterPause)}; idle ${range(own.idleMb)} MB`,
    );
  }
}

/** The key's statement with and without its name, in turn on the same pool, each run after a warm-up. */
async function comparePreparedKeyStatement(): Promise<void> {
  const keyHash = hashApiKey(org.readKey);
  const values = [keyHash, 1, 100_000_000, 60];
  const unnamed = { name: '', text: keyAndCountStatement.text };
  const sides = { named: keyAndCountStatement, unnamed };
  const times: Record<keyof typeof sides, number[]> = { named: [], unnamed: [] };
  for (let i = 0; i < 200; i++) for (const statement of Object.values(sides)) await runPrepared(database.db, statement, values);
  for (let i = 0; i < 2000; i++) {
    for (const side of ['named', 'unnamed'] as const) {
      const start = performance.now();
      await runPrepared(database.db, sides[side], values);
      times[side].push(performance.now() - start);
    }
  }
  const microseconds = (values: number[], p: number) => `${Math.round(percentile(values, p) * 1000)} µs`;
  for (const side of ['named', 'unnamed'] as const)
    report(`key statement ${side}: round trip p50, p99`, `${microseconds(times[side], 50)}, ${microseconds(times[side], 99)}`);
}

/** The first report of a one-worker pool, warmed up or not, then its next ones. */
async function compareRenderWarmUp(): Promise<void> {
  const learner = (await findLearner(database.db, org.orgId, { email: heaviest.email }))!;
  const data = await gatherActivityReport(database.db, {
    orgId: org.orgId,
    orgName: 'Organisme du banc',
    learner,
    year,
    programmeId: null,
    generatedAt: `${year}-12-31 12:00`,
  });
  for (const warmUp of [true, false]) {
    const pool = createRenderPool(1);
    try {
      if (warmUp) await pool.warmUp();
      const times: number[] = [];
      for (let i = 0; i < 6; i++) {
        const start = performance.now();
        await pool.renderActivityReport(data);
        times.push(performance.now() - start);
      }
      report(
        `render pool ${warmUp ? 'warmed up' : 'not warmed up'}: first report, next five (ms)`,
        `${Math.round(times[0]!)}; ${times.slice(1).map(Math.round).join(', ')}`,
      );
    } finally {
      await pool.close();
    }
  }
}

/** Time and size of 16 MB of sheet XML deflated at level 1 and at zlib's default, in turn. */
function compareDeflateLevels(): void {
  const rows: string[] = [];
  for (let row = 2; row < 50_002; row++) {
    rows.push(
      `<row r="${row}"><c r="A${row}" t="inlineStr"><is><t>apprenant${row % 997}@exemple.fr</t></is></c>` +
        `<c r="B${row}" s="1"><v>${46_000 + (row % 365) + (row % 1440) / 1440}</v></c><c r="C${row}"><v>${row % 100}</v></c>` +
        `<c r="D${row}" t="inlineStr"><is><t>Module ${row % 37} — leçon ${row % 11}</t></is></c>` +
        `<c r="E${row}" t="inlineStr"><is><t>${row % 3 ? 'correcte' : 'incorrecte'}</t></is></c></row>`,
    );
  }
  const xml = Buffer.from(rows.join(''));
  const levels = [1, zlib.constants.Z_DEFAULT_COMPRESSION] as const;
  const times = new Map<number, number[]>(levels.map((level) => [level, []]));
  const sizes = new Map<number, number>();
  for (let turn = 0; turn < 7; turn++) {
    for (const level of levels) {
      const start = performance.now();
      sizes.set(level, zlib.gzipSync(xml, { level }).length);
      times.get(level)!.push(performance.now() - start);
    }
  }
  for (const level of levels)
    report(
      `deflate level ${level === 1 ? '1' : 'default (6)'}: ${(xml.length / 1e6).toFixed(1)} MB of sheet XML, p50, size`,
      `${Math.round(percentile(times.get(level)!, 50))} ms, ${(sizes.get(level)! / 1e6).toFixed(2)} MB`,
    );
}

try {
  compareDeflateLevels();
  await compareStartSettings();
  await comparePreparedKeyStatement();
  await compareRenderWarmUp();
} finally {
  await database.close();
}
