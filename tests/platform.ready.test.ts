import { cp, mkdir, mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultRenderWorkers } from '../src/pdf/render-pool';
import { startReportIntervalMs, startReportPrefix } from '../src/start-phases';
import { addLearner, createOrgWithKeys } from './support/factories';
import { useTestDatabase } from './support/lifecycle';
import { freePort } from './support/ports';
import { projectRoot, renderThreadsOf, runToExit, type ServerProcess, startServerProcess } from './support/server-process';

// No cold first report: a server says it is ready (listening, /readyz 200, the "prête" line) only
// once every PDF render worker has loaded pdfmake and the fonts and rendered its warm-up reports,
// which it logs; a worker that cannot stops the start with one French line; and a start that
// lasts says on what it waits.

const database = useTestDatabase();

/** The server's log line about its render workers' warm-up, parsed (its JSON lines come before the ready line). */
function warmUpLogLine(output: string): { time: number; renderWorkers: { ms: number; pdfBytes: number }[]; index: number } | null {
  let index = 0;
  for (const line of output.split('\n')) {
    if (line.startsWith('{') && line.includes('"renderWorkers"')) return { ...JSON.parse(line), index };
    index += line.length + 1;
  }
  return null;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** When `condition` first held, polled every 50 ms (throws past `timeoutMs`). */
async function until(condition: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`still not true after ${timeoutMs} ms`);
    await sleep(50);
  }
  return Date.now();
}

/** The advisory lock Kysely's migrator holds while it migrates (kysely's dialect/postgres/postgres-adapter). */
const kyselyMigrationLockId = '3853314791062309107';

describe('readiness waits for the PDF render workers', () => {
  let org: Awaited<ReturnType<typeof createOrgWithKeys>>;
  let server: ServerProcess | undefined;
  /** Every /readyz poll made while the server started: when its answer came, and what it was. */
  const polls: { at: number; status: number | 'refused' }[] = [];
  /** When the process said it was ready (this machine's clock is PostgreSQL's). */
  let readyAt: Date;

  beforeAll(async () => {
    org = await createOrgWithKeys(database.db);
    await addLearner(database.db, org.orgId, { email: 'camille.martin@dupont.fr', at: '2025-03-01 10:00' });

    const port = await freePort();
    let started = false;
    const poller = (async () => {
      while (!started || !polls.some((poll) => poll.status === 200)) {
        try {
          const response = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2_000) });
          polls.push({ at: Date.now(), status: response.status });
        } catch {
          polls.push({ at: Date.now(), status: 'refused' });
        }
        await sleep(20);
      }
    })();
    server = await startServerProcess(database.url, { PORT: String(port), LOG_LEVEL: 'info' }).finally(() => {
      started = true;
    });
    readyAt = new Date();
    await poller;
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it('logs that every worker rendered its warm-up report before it listens, and says it is ready only then', () => {
    const output = server!.output();
    const warmUp = warmUpLogLine(output);
    expect(warmUp, output).not.toBeNull();
    expect(warmUp!.renderWorkers).toHaveLength(defaultRenderWorkers());
    for (const worker of warmUp!.renderWorkers) expect(worker.pdfBytes).toBeGreaterThan(20_000);
    expect(warmUp!.index).toBeLessThan(output.indexOf('API partenaires prête'));

    // Polled from the process's spawn: refused while it warmed up, 200 once it listened, never before the warm-up ended.
    expect(polls[0]!.status, JSON.stringify(polls)).toBe('refused');
    const answered = polls.filter((poll) => poll.status !== 'refused');
    expect(answered.length).toBeGreaterThan(0);
    for (const poll of answered) {
      expect(poll.status).toBe(200);
      expect(poll.at).toBeGreaterThanOrEqual(warmUp!.time);
    }
  });

  it.runIf(process.platform === 'linux')(
    'has its warm workers running when it is ready, and renders the first report with them',
    async () => {
      // A worker lowers its priority once warm: these threads are the warmed workers.
      const warmWorkers = renderThreadsOf(server!.child.pid!);
      expect(warmWorkers).toHaveLength(defaultRenderWorkers());

      const response = await fetch(`${server!.baseUrl}/activity-report?email=camille.martin%40dupont.fr&year=2025`, {
        headers: { authorization: `Bearer ${org.readKey}` },
      });
      expect(response.status).toBe(200);
      expect(
        Buffer.from(await response.arrayBuffer())
          .subarray(0, 5)
          .toString('latin1'),
      ).toBe('%PDF-');
      expect(renderThreadsOf(server!.child.pid!)).toEqual(warmWorkers);
    },
  );

  it('keeps connections open when they fall idle', { timeout: 30_000 }, async () => {
    // Those the server opened once ready (this test's own were opened before).
    const statementConnections = async () =>
      (
        await sql<{ n: number }>`
          select count(*)::int as n from pg_stat_activity
          where datname = current_database() and application_name = 'partner-api' and backend_start > ${readyAt}`.execute(database.db)
      ).rows[0]!.n;
    const read = () => fetch(`${server!.baseUrl}/users`, { headers: { Authorization: `Bearer ${org.readKey}` } });
    expect((await Promise.all([read(), read(), read()])).map((response) => response.status)).toEqual([200, 200, 200]);
    const open = await statementConnections();
    expect(open).toBeGreaterThan(0);
    // pg-pool closes a connection idle for 10 s, unless the pool holds no more than it keeps.
    await sleep(11_000);
    expect(await statementConnections()).toBeGreaterThan(0);
  });
});

describe('a render worker that cannot render its warm-up report', () => {
  let scratch: string;
  beforeAll(async () => {
    scratch = await mkdtemp(path.join(os.tmpdir(), 'partner-api-ready-'));
  });
  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  it('stops the start with one French line naming the cause and the fix, before listening', { timeout: 120_000 }, async () => {
    // A copy of the project whose pdfmake lost its bold font (an install cut short); the other
    // packages are links to this project's.
    const clone = path.join(scratch, 'partner-api');
    await cp(projectRoot, clone, {
      recursive: true,
      filter: (source) => !/^(node_modules|\.git|\.data|tests)$/.test(path.relative(projectRoot, source)),
    });
    await mkdir(path.join(clone, 'node_modules'));
    for (const entry of await readdir(path.join(projectRoot, 'node_modules'))) {
      if (entry === 'pdfmake' || entry === '.bin') continue;
      await symlink(path.join(projectRoot, 'node_modules', entry), path.join(clone, 'node_modules', entry));
    }
    await cp(path.join(projectRoot, 'node_modules', 'pdfmake'), path.join(clone, 'node_modules', 'pdfmake'), { recursive: true });
    const boldFont = path.join(clone, 'node_modules', 'pdfmake', 'fonts', 'Roboto', 'Roboto-Medium.ttf');
    await rm(boldFont);

    const finished = await runToExit({ start: true }, { DATABASE_URL: database.url, PORT: '0', DEMO: '0', LOG_LEVEL: 'warn' }, clone);

    expect(finished.code, finished.stderr + finished.stdout).toBe(1);
    expect(finished.stdout).not.toContain('API partenaires prête');
    // A start slowed down by a busy machine may also have said what it was waiting for.
    const lines = finished.stderr.split('\n').filter((line) => line.trim() !== '' && !line.startsWith(startReportPrefix));
    expect(lines, finished.stderr).toEqual([
      'Démarrage impossible : le rendu des rapports PDF ne démarre pas : un fil de rendu a échoué sur son rapport d’essai ' +
        `(« ENOENT: no such file or directory, open '${boldFont}' »). Pour y remédier : réinstallez les dépendances (npm ci), puis relancez.`,
    ]);
  });
});

describe('a start that waits', () => {
  it('says every 10 s what it still waits for (here a migration held by another instance), then starts once it may', {
    timeout: 120_000,
  }, async () => {
    // Another instance migrating: it holds Kysely's migration lock (a session advisory lock).
    const otherInstance = new pg.Client({ connectionString: database.url });
    await otherInstance.connect();
    await otherInstance.query(`select pg_advisory_lock(${kyselyMigrationLockId})`);
    let server: ServerProcess | undefined;
    try {
      const starting = startServerProcess(database.url, { LOG_LEVEL: 'warn' });
      starting.catch(() => undefined);
      // Held until the server waited behind the lock for longer than a report interval.
      const waitingSince = await until(async () => {
        const { rows } = await otherInstance.query(
          `select 1 from pg_locks where locktype = 'advisory' and not granted and database = (select oid from pg_database where datname = current_database())`,
        );
        return rows.length > 0;
      }, 60_000);
      await sleep(startReportIntervalMs + 3_000 - (Date.now() - waitingSince));
      await otherInstance.query(`select pg_advisory_unlock(${kyselyMigrationLockId})`);
      server = await starting;

      const output = server.output();
      const reportsIn = (text: string) => text.split('\n').filter((line) => line.startsWith(startReportPrefix));
      const reports = reportsIn(output);
      expect(reports.length, output).toBeGreaterThanOrEqual(1);
      const first = /^Démarrage toujours en cours après (\d+) s, en attente de : .*la migration du schéma de la base/.exec(reports[0]!);
      expect(first, reports[0]).not.toBeNull();
      // Seconds since the start, from 10 (a busy machine may run the timer a little late).
      expect(Number(first![1])).toBeGreaterThanOrEqual(startReportIntervalMs / 1000);
      // Said before it was ready, and no more after.
      expect(output.indexOf(reports.at(-1)!)).toBeLessThan(output.indexOf('API partenaires prête'));
      await sleep(startReportIntervalMs + 500);
      expect(reportsIn(server.output())).toEqual(reports);
      expect((await fetch(server.baseUrl.replace(/\/v1$/, '/readyz'))).status).toBe(200);
    } finally {
      await otherInstance.end();
      await server?.stop();
    }
  });
});
