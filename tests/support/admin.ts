import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { projectRoot } from './server-process';

const run = promisify(execFile);

function adminProcess(databaseUrl: string, args: string[], environment: Record<string, string>) {
  return run(process.execPath, ['--import', 'tsx', 'scripts/admin.ts', ...args], {
    cwd: projectRoot,
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', ...environment },
  });
}

/** `npm run --silent admin -- <args> --json` against a test database: the parsed JSON result. */
export async function admin(databaseUrl: string, args: string[], environment: Record<string, string> = {}): Promise<any> {
  const { stdout } = await adminProcess(databaseUrl, [...args, '--json'], environment);
  return JSON.parse(stdout);
}

/** The same without --json: what an operator reads (stdout and stderr). */
export async function adminText(
  databaseUrl: string,
  args: string[],
  environment: Record<string, string> = {},
): Promise<{ stdout: string; stderr: string }> {
  return adminProcess(databaseUrl, args, environment);
}

/** The same, expected to fail: exit code, stdout and stderr. */
export async function adminFailure(
  databaseUrl: string,
  args: string[],
  environment: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    await adminProcess(databaseUrl, args, environment);
  } catch (error) {
    const failure = error as { code: number; stdout: string; stderr: string };
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
  }
  throw new Error(`admin ${args.join(' ')} should have failed`);
}
