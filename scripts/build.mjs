// The server as `npm start` runs it: src/server.ts and its render worker, each bundled with
// esbuild into one JavaScript file of dist/ (packages stay in node_modules). Plain Node runs them.
// Running the TypeScript through tsx instead costs every process and worker thread tsx's own
// loader thread and its memory.
//
// It takes well under a second, so `npm start` builds every time and dist/ is never stale. Several
// processes may build at once (the test suite's servers, a `make run`): each file is written beside
// its place and renamed into it, so a server never loads a half-written file.
//
// dist/ sits one folder below the project, as src/ does: the paths the code finds from
// `import.meta.url` (openapi.yaml, the render worker beside its pool) hold in both.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const projectRoot = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const distFolder = path.join(projectRoot, 'dist');

const result = await build({
  absWorkingDir: projectRoot,
  entryPoints: { server: 'src/server.ts', 'render-worker': 'src/pdf/render-worker.ts' },
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20.19',
  packages: 'external',
  outdir: distFolder,
  outExtension: { '.js': '.mjs' },
  // Not minified, so a stack trace names the functions and the bundle reads as the sources do.
  // `NODE_OPTIONS=--enable-source-maps npm start` names the TypeScript lines instead (it is not
  // the default: it holds the map in memory and makes every stack trace dearer).
  sourcemap: 'linked',
  write: false,
  logLevel: 'warning',
});

// The script of the page « API et intégrations » (page/), for the browser: one file with
// openapi-fetch inside, served at /integrations/page.js.
const page = await build({
  absWorkingDir: projectRoot,
  entryPoints: { page: 'page/main.ts' },
  bundle: true,
  platform: 'browser',
  format: 'esm',
  target: 'es2022',
  outdir: distFolder,
  sourcemap: 'linked',
  write: false,
  logLevel: 'warning',
});

mkdirSync(distFolder, { recursive: true });
for (const file of [...result.outputFiles, ...page.outputFiles]) {
  const staging = `${file.path}.${process.pid}.tmp`;
  writeFileSync(staging, file.contents);
  renameSync(staging, file.path);
}
