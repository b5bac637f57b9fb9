import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { type ActivityReportData, buildActivityReport } from './activity-report';
import { renderPdf } from './render';
import { warmUpReportData } from './warm-up-report';

/** A render job of the pool (`src/pdf/render-pool.ts`). */
export interface RenderRequest {
  id: number;
  data: ActivityReportData;
}

/** Given to a worker as it starts: whether it renders the warm-up report before its first job. */
export interface RenderWorkerData {
  warmUp: boolean;
}

/** What a worker tells the pool: once, how its warm-up went; then the answer to each job. */
export type RenderWorkerMessage =
  | { kind: 'warmed-up'; pdfBytes: number }
  | { kind: 'warm-up-failed'; reason: string }
  | { kind: 'rendered'; id: number; pdf: Uint8Array }
  | { kind: 'failed'; id: number; error: string };

const post = (message: RenderWorkerMessage, transfer?: ArrayBuffer[]) => parentPort!.postMessage(message, transfer);

/**
 * Rendering is batch work; the event loop answers people. On Linux a nice value belongs to a thread,
 * and pid 0 means the calling thread: this lowers the renderer alone, so when the cores are busy
 * the event loop still gets them first. (Elsewhere it would lower the whole process: not done.)
 */
function lowerPriority(): void {
  if (process.platform !== 'linux') return;
  try {
    setPriority(0, 10);
  } catch {
    // Not allowed here (a container without the capability): render at normal priority.
  }
}

/**
 * How many times a worker renders the warm-up report before its first job: one loads pdfmake and
 * the fonts, and V8 optimizes pdfkit's and fontkit's functions over several more, so that the first
 * real report costs a warm one's time (docs/performance.md, « The render workers' warm-up »).
 */
const warmUpRenders = 12;

async function warmUp(): Promise<number> {
  let pdfBytes = 0;
  for (let render = 0; render < warmUpRenders; render += 1)
    pdfBytes = (await renderPdf(buildActivityReport(warmUpReportData()))).byteLength;
  return pdfBytes;
}

// Before any job: load pdfmake and the fonts, and render a report several times, so that no
// partner's report pays for it (the server waits for this before it says it is ready). Nothing is
// served yet, so it renders at normal priority, and lowers it once warm. A worker started for a job
// that is already waiting skips it: that job warms it up.
const warmsUpFirst = (workerData as RenderWorkerData).warmUp;
if (!warmsUpFirst) lowerPriority();
const warmedUp: Promise<boolean> = warmsUpFirst
  ? warmUp().then(
      (pdfBytes) => {
        lowerPriority();
        post({ kind: 'warmed-up', pdfBytes });
        return true;
      },
      (error: unknown) => {
        post({ kind: 'warm-up-failed', reason: error instanceof Error ? error.message : String(error) });
        return false;
      },
    )
  : Promise.resolve(true);

/** The pool's worker thread: builds and renders one report at a time, off the server's event loop. */
parentPort!.on('message', async ({ id, data }: RenderRequest) => {
  // A job that arrives during the warm-up waits for it (the pool ends a worker whose warm-up failed).
  if (!(await warmedUp)) return;
  try {
    const rendered = await renderPdf(buildActivityReport(data));
    // Hand the bytes over without a copy, unless they share a pooled buffer with other data.
    const pdf =
      rendered.byteOffset === 0 && rendered.byteLength === rendered.buffer.byteLength
        ? rendered
        : Uint8Array.prototype.slice.call(rendered);
    post({ kind: 'rendered', id, pdf }, [pdf.buffer as ArrayBuffer]);
  } catch (error) {
    post({ kind: 'failed', id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  }
});
