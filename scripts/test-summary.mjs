// Prints the run's closing line in the plain form CI reads ("N passed, N failed, N skipped"),
// from vitest's JSON report.
import { readFileSync } from 'node:fs';

const report = JSON.parse(readFileSync(process.argv[2], 'utf8'));
process.stdout.write(
  `\ntests: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${report.numPendingTests + report.numTodoTests} skipped\n`,
);
