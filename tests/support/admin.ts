import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { projectRoot } from './server-process';

const run = promisify(execFile);

/** `npm run --silent admin -- <args> --json` against a test database: the parsed JSON result. */
export async function admin(databaseUrl: string, args: string[], environment: Record<string, string> = {}): Promise<any> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'scripts/admin.ts', ...args, '--json'], {
    cwd: projectRoot,
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', ...environment },
  });
  return JSON.parse(stdout);
}

/** The same, expected to fail: exit code and stderr. */
export async function adminFailure(databaseUrl: string, args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    await run(process.execPath, ['--import', 'tsx', 'scripts/admin.ts', ...args], {
      cwd: projectRoot,
      env: { ...process.env, DATABASE_URL: databaseUrl },
    });
  } catch (error) {
    const failure = error as { code: number; stderr: string };
    return { code: failure.code, stderr: failure.stderr };
  }
  throw new Error(`la commande admin ${args.join(' ')} aurait dû échouer`);
}
