import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface ServerProcess {
  baseUrl: string;
  child: ChildProcess;
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

// `npm start`'s own command line (its Node flags included), run without npm in between so that
// signals reach the server itself.
const [, ...startArguments] = (
  JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { scripts: { start: string } }
).scripts.start.split(' ');

/** A real server process, started as `npm start` starts it, on a test database, on a free port. */
export async function startServerProcess(databaseUrl: string, environment: Record<string, string> = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, startArguments, {
    cwd: projectRoot,
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: '0', HOST: '127.0.0.1', DEMO: '0', LOG_LEVEL: 'warn', ...environment },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr!.on('data', (chunk) => {
    output += chunk;
  });
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start:\n${output}`)), 30_000);
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
