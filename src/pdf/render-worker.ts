import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { type ActivityReportData, buildActivityReport } from './activity-report';
import { renderPdf } from './render';

/** A render job of the pool (`src/pdf/render-pool.ts`) and its answer. */
export interface RenderRequest {
  id: number;
  data: ActivityReportData;
}
export type RenderResponse = { id: number; pdf: Uint8Array } | { id: number; error: string };

// Rendering is batch work; the event loop answers people. On Linux a nice value belongs to a thread,
// and pid 0 means the calling thread: this lowers the renderer alone, so when the cores are busy
// the event loop still gets them first. (Elsewhere it would lower the whole process: not done.)
if (process.platform === 'linux') {
  try {
    setPriority(0, 10);
  } catch {
    // Not allowed here (a container without the capability): render at normal priority.
  }
}

/** The pool's worker thread: builds and renders one report at a time, off the server's event loop. */
parentPort!.on('message', async ({ id, data }: RenderRequest) => {
  try {
    const rendered = await renderPdf(buildActivityReport(data));
    // Hand the bytes over without a copy, unless they share a pooled buffer with other data.
    const pdf =
      rendered.byteOffset === 0 && rendered.byteLength === rendered.buffer.byteLength
        ? rendered
        : Uint8Array.prototype.slice.call(rendered);
    parentPort!.postMessage({ id, pdf } satisfies RenderResponse, [pdf.buffer as ArrayBuffer]);
  } catch (error) {
    parentPort!.postMessage({
      id,
      error: error instanceof Error ? (error.stack ?? error.message) : String(error),
    } satisfies RenderResponse);
  }
});
