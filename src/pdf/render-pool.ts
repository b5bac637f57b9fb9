import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { ActivityReportData } from './activity-report';
import type { RenderRequest, RenderResponse } from './render-worker';

/**
 * Rendering a big PDF is seconds of CPU with no I/O: on the server's thread it would stall every
 * other request. A few worker threads render instead; the event loop only gathers data and sends
 * bytes. Jobs wait in a queue when every worker is busy.
 */
export interface RenderPool {
  renderActivityReport(data: ActivityReportData): Promise<Buffer>;
  /** Workers alive now (started lazily, at most `size`). */
  readonly workerCount: number;
  close(): Promise<void>;
}

interface Job {
  id: number;
  data: ActivityReportData;
  resolve(pdf: Buffer): void;
  reject(error: Error): void;
}

interface Slot {
  worker: Worker;
  job: Job | null;
}

const loaderUrl = new URL('./render-worker-loader.mjs', import.meta.url);

/** One core stays for the event loop and PostgreSQL; at least one worker, at most four. */
export function defaultRenderWorkers(cores = availableParallelism()): number {
  return Math.max(1, Math.min(4, cores - 1));
}

export function createRenderPool(size = defaultRenderWorkers()): RenderPool {
  const slots: Slot[] = [];
  const queue: Job[] = [];
  let nextId = 1;
  let closed = false;

  function start(): Slot {
    const slot: Slot = { worker: new Worker(loaderUrl), job: null };
    slot.worker.unref();
    slot.worker.on('message', (response: RenderResponse) => {
      const job = slot.job;
      if (!job || job.id !== response.id) return;
      finish(slot);
      if ('error' in response) job.reject(new Error(`PDF report render failed: ${response.error}`));
      else job.resolve(Buffer.from(response.pdf.buffer, response.pdf.byteOffset, response.pdf.byteLength));
    });
    // A worker that dies takes its job with it; the next job starts a fresh one.
    const fail = (error: Error) => {
      const index = slots.indexOf(slot);
      if (index >= 0) slots.splice(index, 1);
      const job = slot.job;
      slot.job = null;
      job?.reject(error);
      dispatch();
    };
    slot.worker.on('error', fail);
    slot.worker.on('exit', (code) => {
      if (slots.includes(slot)) fail(new Error(`PDF render worker exited (code ${code})`));
    });
    slots.push(slot);
    return slot;
  }

  function finish(slot: Slot) {
    slot.job = null;
    // An idle worker does not keep the process alive; a busy one does, until its job is done.
    slot.worker.unref();
    dispatch();
  }

  function dispatch() {
    while (queue.length > 0 && !closed) {
      const slot = slots.find((candidate) => candidate.job === null) ?? (slots.length < size ? start() : null);
      if (!slot) return;
      const job = queue.shift()!;
      slot.job = job;
      slot.worker.ref();
      slot.worker.postMessage({ id: job.id, data: job.data } satisfies RenderRequest);
    }
  }

  return {
    renderActivityReport(data) {
      if (closed) return Promise.reject(new Error('PDF render pool closed'));
      return new Promise<Buffer>((resolve, reject) => {
        queue.push({ id: nextId++, data, resolve, reject });
        dispatch();
      });
    },
    get workerCount() {
      return slots.length;
    },
    async close() {
      closed = true;
      for (const job of queue.splice(0)) job.reject(new Error('PDF render pool closed'));
      const stopping = slots.splice(0);
      for (const slot of stopping) slot.job?.reject(new Error('PDF render pool closed'));
      await Promise.all(stopping.map((slot) => slot.worker.terminate()));
    },
  };
}
