// A worker thread does not inherit the parent's TypeScript loader: register tsx, then run the
// TypeScript entry of the worker (render-worker.ts).
import { tsImport } from 'tsx/esm/api';

await tsImport('./render-worker.ts', import.meta.url);
