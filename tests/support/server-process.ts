import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface ServerProcess {
  baseUrl: string;
  child: ChildProcess;
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

// `npm start` builds the server (`npm run build`: the suite's global setup does it once) and then
// execs `node <arguments>`. The tests run that command line without npm in between, so that
// signals reach the server itself.
const startArguments = /&& exec node (.+)$/
  .exec((JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start)![1]!
  .split(' ');

/**
 * `npm run build`: the bundle that `startServerProcess` runs. Once per run: the suite's global setup
 * (tests/support/global-build.ts), a benchmark as it loads tests/bench/support.ts.
 */
export function buildServer(): void {
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: projectRoot, stdio: 'inherit' });
}

/** The environment of a child: this one's with `environment` on top (an `undefined` there removes a variable). */
function childEnvironment(environment: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const merged: NodeJS.ProcessEnv = { ...process.env, ...environment };
  for (const [name, value] of Object.entries(environment)) if (value === undefined) delete merged[name];
  return merged;
}

/**
 * A real server process, started as `npm start` starts it, on a test database, on a free port: this
 * project's, or that of a copy of it built in `cwd`; `nodeArguments` go before the script (a
 * benchmark's V8 flags).
 */
export async function startServerProcess(
  databaseUrl: string,
  environment: Record<string, string> = {},
  cwd = projectRoot,
  nodeArguments: readonly string[] = [],
): Promise<ServerProcess> {
  const env = childEnvironment({ DATABASE_URL: databaseUrl, PORT: '0', HOST: '127.0.0.1', DEMO: '0', LOG_LEVEL: 'warn', ...environment });
  const child = spawn(process.execPath, [...nodeArguments, ...startArguments], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return listening(child);
}

/**
 * `count` server processes on one database, started in parallel; when one fails to start, the
 * others are stopped before its error is thrown, so that no process outlives the file's tests.
 */
export async function startServerProcesses(
  count: number,
  databaseUrl: string,
  environment: Record<string, string> = {},
): Promise<ServerProcess[]> {
  const starts = await Promise.allSettled(Array.from({ length: count }, () => startServerProcess(databaseUrl, environment)));
  const started = starts.flatMap((start) => (start.status === 'fulfilled' ? [start.value] : []));
  const failure = starts.find((start) => start.status === 'rejected');
  if (failure) {
    await Promise.all(started.map((server) => server.stop()));
    throw failure.reason;
  }
  return started;
}

/**
 * `npm start` itself, as `make run` runs it, with its own settings (the embedded PostgreSQL unless
 * DATABASE_URL is given), in a process group of its own, as a terminal's foreground job:
 * `interrupt()` is Ctrl-C, which the terminal sends to every process of the group (npm, and the
 * server that npm also passes it on to). `spawnNpmStart` does not wait for it to listen.
 */
export function spawnNpmStart(environment: Record<string, string | undefined>) {
  const child = spawn('npm', ['start'], {
    cwd: projectRoot,
    env: childEnvironment({ PORT: '0', HOST: '127.0.0.1', ...environment }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk;
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  return {
    child,
    output: () => output,
    interrupt(): Promise<number | null> {
      return new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        process.kill(-child.pid!, 'SIGINT');
      });
    },
  };
}

export async function startNpmStart(
  environment: Record<string, string | undefined>,
): Promise<ServerProcess & { interrupt(): Promise<number | null> }> {
  const { child, interrupt } = spawnNpmStart(environment);
  return { ...(await listening(child)), interrupt };
}

const listenTimeoutMs = 50_000;

/** Waits for a server child to listen: its base URL from the line `make run` prints. */
async function listening(child: ChildProcess): Promise<ServerProcess> {
  let output = '';
  child.stdout!.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr!.on('data', (chunk) => {
    output += chunk;
  });
  const baseUrl = await new Promise<string>((resolve, reject) => {
    // A start includes the render workers' warm-up (seconds of CPU): generous on a busy machine,
    // yet within the tests' hook timeout (vitest.config.ts), so that this error, with what the
    // server said (src/start-phases.ts: what it still waited for), is the one reported.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the server did not start within ${listenTimeoutMs / 1000} s; it said:\n${output}`));
    }, listenTimeoutMs);
    const check = () => {
      const match = /API partenaires prête : (\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code}) before listening:\n${output}`));
    });
  });
  return {
    baseUrl,
    child,
    output: () => output,
    stop(signal = 'SIGTERM') {
      return new Promise((resolve) => {
        // Already gone (an exit, or a signal such as a test's kill -9): nothing to wait for.
        if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        child.kill(signal);
      });
    },
  };
}

export interface FinishedProcess {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * A project command run to its end from `cwd` (the project, or a copy of it): `start` is
 * `npm start`'s command line, `admin` the operator commands'. For the ones expected to fail.
 */
export function runToExit(
  command: { start: true } | { admin: string[] },
  environment: Record<string, string | undefined>,
  cwd = projectRoot,
): Promise<FinishedProcess> {
  const args = 'start' in command ? startArguments : ['--import', 'tsx', 'scripts/admin.ts', ...command.admin];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, env: childEnvironment(environment), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`still running after 90 s:\n${stdout}${stderr}`));
    }, 90_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * An operator command run as the README runs it, `npm run --silent admin -- …`, into a pipe whose
 * reader starts late (`| (sleep 1; cat)`, jq on a busy machine) and then does not keep up (a pause
 * after each chunk): what it wrote, whole, and its exit code.
 */
export async function runAdminIntoSlowPipe(adminArguments: string, databaseUrl: string): Promise<{ code: number | null; output: string }> {
  const child = spawn('bash', ['-c', `set -o pipefail; npm run --silent admin -- ${adminArguments} | (sleep 1; cat)`], {
    cwd: projectRoot,
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const chunks: Buffer[] = [];
  const read = new Promise<void>((resolve) => {
    child.stdout.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      child.stdout.pause();
      setTimeout(() => child.stdout.resume(), 20);
    });
    child.stdout.on('end', resolve);
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  await read;
  return { code, output: Buffer.concat(chunks).toString('utf8') };
}

/** The fields of /proc/<path>/stat after the command's name (Linux): [0] is the state, [1] the parent. Undefined once it has ended. */
export function procStat(path: string | number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${path}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** The processes whose parent is `pid` now (Linux). */
export function childProcessesOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry) && procStat(entry)?.[1] === String(pid))
    .map(Number);
}

/** A thread's nice value (Linux), or null once it has ended. */
export function niceOf(pid: number, thread: string): number | null {
  const fields = procStat(`${pid}/task/${thread}`);
  return fields ? Number(fields[16]) : null;
}

/** The PDF render workers of a process (Linux): its threads at the renderer's nice value (src/pdf/render-worker.ts). */
export function renderThreadsOf(pid: number): string[] {
  return readdirSync(`/proc/${pid}/task`).filter((thread) => niceOf(pid, thread) === 10);
}
