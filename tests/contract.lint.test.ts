import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { projectRoot } from './support/server-process';

const run = promisify(execFile);
const bin = (name: string) => path.join(projectRoot, 'node_modules', '.bin', name);

/*
 * Both contracts (openapi.yaml for /v1, management.yaml for /manage/v1) lint clean with both
 * linters integrators' pipelines use, warnings included: a warning is either fixed or turned off in
 * the linter's configuration with the reason beside it (redocly.yaml with its plugin,
 * .spectral.yaml). `make lint` runs the same.
 */
describe.each(['openapi.yaml', 'management.yaml'])('%s under the linters', (document) => {
  it('Redocly (recommended rules): no error, no warning', async () => {
    const { stdout } = await run(bin('redocly'), ['lint', document, '--format=json'], {
      cwd: projectRoot,
      maxBuffer: 16 * 1024 * 1024,
    });
    const report = JSON.parse(stdout) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; message: string }[] };
    expect(report.problems.map((problem) => `${problem.ruleId}: ${problem.message}`)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  }, 60_000);

  it('Spectral (spectral:oas): no error, no warning, no hint', async () => {
    const { stdout } = await run(bin('spectral'), ['lint', document, '--format=json', '--fail-severity=hint'], {
      cwd: projectRoot,
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { stdout: string }) => ({ stdout: error.stdout }));
    const results = JSON.parse(stdout.slice(0, stdout.lastIndexOf(']') + 1)) as { code: string; message: string; path: string[] }[];
    expect(results.map((result) => `${result.code}: ${result.message} (${result.path.join('.')})`)).toEqual([]);
  }, 60_000);
});
