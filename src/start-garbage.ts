/**
 * A full collection once a start is done: what a start allocates and drops (the render worker's
 * warm-up reports: some 40 MB of its heap; the server's modules and migrations) otherwise stays
 * resident until the heap next fills, which an idle server never does. `gc` exists when the process
 * runs with --expose-gc, as `npm start` runs it; elsewhere (the tests' pools, tsx) this does nothing.
 */
export function collectStartGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}
