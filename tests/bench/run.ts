import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** `make bench`: every tests/bench/*.bench.ts in turn (or only those named on the command line). */
const folder = path.dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const benches = readdirSync(folder)
  .filter((file) => file.endsWith('.bench.ts'))
  .filter((file) => only.length === 0 || only.some((name) => file.startsWith(name)))
  .sort();
let failed = 0;
for (const file of benches) {
  process.stdout.write(`\n=== ${file} ===\n`);
  const result = spawnSync(process.execPath, ['--import', 'tsx', path.join(folder, file)], { stdio: 'inherit' });
  if (result.status !== 0) failed += 1;
}
process.exit(failed === 0 ? 0 : 1);
