import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DB } from '../db/connection';
import { createEndpoint } from '../db/webhook-endpoints';
import { type EventData, recordEvent } from '../db/webhooks';
import { applicationDatabaseName } from '../src/database';
import { serverUrlFor, startEmbeddedPostgres } from '../src/local/embedded-postgres';
import { generateWebhookSecret } from '../src/webhooks/signature';
import { createOrgWithKeys } from './support/factories';
import { freePort, postgresAnswersOn } from './support/ports';
import { spawnNpmStart, startNpmStart } from './support/server-process';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver';

// Ctrl-C in `make run`: the terminal sends SIGINT to its whole foreground process group, npm and
// the server (which npm also passes it on to), and used to send it to the embedded PostgreSQL as
// well, which shut down under a server still draining: the webhook queue's connections broke and
// logged WARN lines (a whole pg client object each, once), and what was still in flight could not
// be recorded. The server now keeps PostgreSQL out of that group and stops it itself, last.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** npm's own warnings about this machine's npm configuration (~/.npmrc), which the project does not choose. */
const machineNpmWarning = /^npm warn Unknown (user|global|project|env|builtin) config /;

describe('Ctrl-C in make run (npm start with the embedded PostgreSQL)', () => {
  let dataDir: string;
  let postgresPort: number;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'partner-api-quiet-stop-'));
    // As root, PostgreSQL runs as the `postgres` user, who must be able to enter the folder.
    await chmod(dataDir, 0o755);
    postgresPort = await freePort();
    // A receiver slow enough for the Ctrl-C to fall in the middle of a delivery.
    receiver = await startWebhookReceiver(() => ({ status: 200, delayMs: 1_500 }));
  });
  afterAll(async () => {
    await receiver?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('stops quietly, exit code 0, after the delivery in flight is recorded and before PostgreSQL stops', async () => {
    let code: number | null = null;
    const server = await startNpmStart({
      DATABASE_URL: undefined,
      DATA_DIR: dataDir,
      EMBEDDED_PG_PORT: String(postgresPort),
      DEMO: '0',
      LOG_LEVEL: 'info',
      WEBHOOK_ALLOW_INSECURE: '1',
    });
    let db: DB | null = createDb(serverUrlFor(postgresPort, applicationDatabaseName), { poolSize: 1 });
    try {
      const org = await createOrgWithKeys(db);
      await createEndpoint(db, { orgId: org.orgId, url: receiver.url, secret: generateWebhookSecret(), eventTypes: ['learner.enrolled'] });
      const data = { learner: null, status: 'pending', programmes: [] } as unknown as EventData<'learner.enrolled'>;
      await recordEvent(db, { orgId: org.orgId, type: 'learner.enrolled', data });
      await receiver.waitFor((received) => received.length === 1, 15_000);
      await db.destroy();
      db = null;

      code = await server.interrupt();

      const lines = server
        .output()
        .split('\n')
        .filter((line) => line.trim() !== '' && !machineNpmWarning.test(line));
      const loud = lines.filter((line) => {
        if (!line.startsWith('{')) return /\b(WARN|ERR!|ERROR)\b|^npm error/i.test(line);
        return (JSON.parse(line) as { level: number }).level >= 40;
      });
      expect(loud).toEqual([]);
      // No object dumped whole into a line (a pg client is thousands of characters).
      expect(lines.filter((line) => line.length > 400)).toEqual([]);
      expect(lines.some((line) => line.includes('"msg":"arrêté"'))).toBe(true);
    } finally {
      await db?.destroy();
      // After a failure above, a stop all the same (a no-op once it exited).
      await server.interrupt();
    }
    // PostgreSQL stopped cleanly (no lock file left) and the attempt in flight was recorded.
    expect(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
    const cluster = await startEmbeddedPostgres({ databaseDir: path.join(dataDir, 'postgres'), port: postgresPort });
    const check = createDb(serverUrlFor(postgresPort, applicationDatabaseName), { poolSize: 1 });
    try {
      const deliveries = await check.selectFrom('webhook_deliveries').select(['status', 'attempt_count']).execute();
      expect(deliveries).toEqual([{ status: 'delivered', attempt_count: 1 }]);
    } finally {
      await check.destroy();
      await cluster.stop();
    }
    // npm waited for the server (the script execs it: no shell in between to die of the Ctrl-C and
    // make npm leave first, with the signal), and `make run` ends without "*** Interrupt".
    expect(code).toBe(0);
  }, 120_000);

  it('stops at once on Ctrl-C while still starting, and takes its PostgreSQL along (kept out of the terminal’s Ctrl-C)', async () => {
    const startingDir = await mkdtemp(path.join(os.tmpdir(), 'partner-api-stop-starting-'));
    await chmod(startingDir, 0o755);
    const port = await freePort();
    // The demo's first seed gives a few seconds between PostgreSQL answering and the server listening.
    const server = spawnNpmStart({ DATABASE_URL: undefined, DATA_DIR: startingDir, EMBEDDED_PG_PORT: String(port), DEMO: '1' });
    try {
      const deadline = Date.now() + 60_000;
      while (!(await postgresAnswersOn(port)) && Date.now() < deadline) await sleep(100);
      expect(server.output()).not.toContain('API partenaires prête');

      await server.interrupt();

      expect(server.output()).toContain('SIGINT reçu pendant le démarrage : arrêt');
      const stoppedBy = Date.now() + 10_000;
      while ((await postgresAnswersOn(port)) && Date.now() < stoppedBy) await sleep(100);
      expect(await postgresAnswersOn(port)).toBe(false);
    } finally {
      await server.interrupt();
      // PostgreSQL refuses connections before it has finished stopping (its last checkpoint writes
      // pg_wal): its folder is removed once it has exited, which removes its lock file.
      const exitedBy = Date.now() + 10_000;
      while (existsSync(path.join(startingDir, 'postgres', 'postmaster.pid')) && Date.now() < exitedBy) await sleep(100);
      await rm(startingDir, { recursive: true, force: true });
    }
  }, 120_000);
});
