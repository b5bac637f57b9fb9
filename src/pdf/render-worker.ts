import { parentPort } from 'node:worker_threads';
import { type ActivityReportData, buildActivityReport } from './activity-report';
import { renderPdf } from './render';

/** A render job of the pool (`src/pdf/render-pool.ts`) and its answer. */
export interface RenderRequest {
  id: number;
  data: ActivityReportData;
}
export type RenderResponse = { id: number; pdf: Uint8Array } | { id: number; error: string };

/** The pool's worker thread: builds and renders one report at a time, off the server's event loop. */
parentPort!.on('message', async ({ id, data }: RenderRequest) => {
  try {
    const rendered = await renderPdf(buildActivityReport(data));
    // Hand the bytes over without a copy, unless they share a pooled buffer with other data.
    const pdf = rendered.byteOffset === 0 && rendered.byteLength === rendered.buffer.byteLength ? rendered : Uint8Array.prototype.slice.call(rendered);
    parentPort!.postMessage({ id, pdf } satisfies RenderResponse, [pdf.buffer as ArrayBuffer]);
  } catch (error) {
    parentPort!.postMessage({ id, error: error instanceof Error ? error.stack ?? error.message : String(error) } satisfies RenderResponse);
  }
});
