// Prints the closing lines of `make test`, from vitest's JSON reports: one line per Node version
// the suite ran on, then the whole in the plain form CI reads ("N passed, N failed, N skipped").
// Arguments: `<node version>=<report file>`, one per run. Exits 1 when a run left no report.
import { existsSync, readFileSync } from 'node:fs';

const runs = process.argv.slice(2).map((argument) => {
  const separator = argument.indexOf('=');
  return { node: argument.slice(0, separator), reportFile: argument.slice(separator + 1) };
});
if (runs.length === 0 || runs.some((run) => !run.node || !run.reportFile)) {
  process.stderr.write('usage: node scripts/test-summary.mjs <node version>=<vitest JSON report>...\n');
  process.exit(2);
}

const total = { passed: 0, failed: 0, skipped: 0 };
let missingReport = false;
process.stdout.write('\n');
for (const { node, reportFile } of runs) {
  if (!existsSync(reportFile)) {
    missingReport = true;
    process.stdout.write(`Node ${node}: no report, the run stopped before its end\n`);
    continue;
  }
  const report = JSON.parse(readFileSync(reportFile, 'utf8'));
  // A file that fails before any of its tests runs (an import, a hook) counts as one failure.
  const failedFilesWithoutFailedTest = report.testResults.filter(
    (file) => file.status === 'failed' && !file.assertionResults.some((test) => test.status === 'failed'),
  ).length;
  const counts = {
    passed: report.numPassedTests,
    failed: report.numFailedTests + failedFilesWithoutFailedTest,
    skipped: report.numPendingTests + report.numTodoTests,
  };
  // Worded unlike the closing line, so that only that one reads as the whole run's count.
  process.stdout.write(`Node ${node}: passed ${counts.passed}, failed ${counts.failed}, skipped ${counts.skipped}\n`);
  for (const key of Object.keys(total)) total[key] += counts[key];
}
process.stdout.write(`tests: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped\n`);
process.exit(missingReport ? 1 : 0);
