import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { ActivityReportData } from './activity-report';
import type { RenderRequest, RenderWorkerData, RenderWorkerMessage } from './render-worker';

/**
 * Rendering a big PDF is seconds of CPU with no I/O: on the server's thread it would stall every
 * other request. A few worker threads render instead; the event loop only gathers data and sends
 * bytes. Jobs wait in a queue when every worker is busy.
 *
 * A worker's first reports cost several times a warm one (pdfmake's load, the fonts, the JIT's first
 * passes). The server calls `warmUp` as it starts: every worker starts ahead of the jobs and renders
 * the warm-up report (src/pdf/warm-up-report.ts) first. Otherwise a worker starts with the job that
 * needs it, and that job pays for the warm-up: in the tests' pools, and when a worker that died (a
 * crash is exceptional) is replaced.
 */
export interface RenderPool {
  renderActivityReport(data: ActivityReportData): Promise<Buffer>;
  /**
   * Starts every worker, each rendering the warm-up report at normal priority (call it before
   * serving: nothing else needs the cores yet), and resolves when all have; rejects, with the reason
   * in French for the operator who started the server, when one cannot.
   */
  warmUp(): Promise<RenderPoolWarmUp>;
  /** Workers alive now (started by `warmUp`, or lazily by the jobs, at most `size`). */
  readonly workerCount: number;
  close(): Promise<void>;
}

export interface RenderPoolWarmUp {
  /** From `warmUp` until the last worker had rendered its warm-up report. */
  ms: number;
  /**
   * Each worker's warm-up: from its start (thread, modules) to its warm-up report rendered, and that
   * report's size (0 and 0 for a worker a job had already started and warmed).
   */
  workers: { ms: number; pdfBytes: number }[];
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
  /** Rendered its warm-up report, or was started for a waiting job (which warms it instead). */
  warm: boolean;
  /** Settles when the worker is warm; rejects when it fails its warm-up or dies first (handled: no one may be waiting). */
  warmedUp: Promise<WorkerWarmUp>;
  settleWarmUp: { resolve(result: WorkerWarmUp): void; reject(error: Error): void };
}

type WorkerWarmUp = RenderPoolWarmUp['workers'][number];

/**
 * The worker's entry. Run from the TypeScript sources (tsx: tests, scripts), a worker thread needs
 * tsx registered in it first; the server's bundle (scripts/build.mjs) has its compiled worker beside it.
 */
const workerUrl = import.meta.url.endsWith('.ts')
  ? new URL('./render-worker-loader.mjs', import.meta.url)
  : new URL('./render-worker.mjs', import.meta.url);

/** One core stays for the event loop and PostgreSQL; at least one worker, at most four. */
export function defaultRenderWorkers(cores = availableParallelism()): number {
  return Math.max(1, Math.min(4, cores - 1));
}

/** The operator's sentence for a worker that could not render its warm-up report. */
function warmUpFailure(reason: string): Error {
  return new Error(
    `le rendu des rapports PDF ne démarre pas : un fil de rendu a échoué sur son rapport d’essai (« ${reason} »). ` +
      'Pour y remédier : réinstallez les dépendances (npm ci), puis relancez.',
  );
}

export function createRenderPool(size = defaultRenderWorkers()): RenderPool {
  const slots: Slot[] = [];
  const queue: Job[] = [];
  let nextId = 1;
  let closed = false;

  /** A new worker; `warmUp`: it renders the warm-up report before it takes a job. */
  function start(warmUp: boolean): Slot {
    const startedAt = performance.now();
    let settleWarmUp!: Slot['settleWarmUp'];
    const warmedUp = new Promise<WorkerWarmUp>((resolve, reject) => {
      settleWarmUp = { resolve, reject };
    });
    // Nobody may be waiting (a worker a job started, a pool closed): its failure is not unhandled.
    warmedUp.catch(() => undefined);
    const worker = new Worker(workerUrl, { workerData: { warmUp } satisfies RenderWorkerData });
    const slot: Slot = { worker, job: null, warm: !warmUp, warmedUp, settleWarmUp };
    if (slot.warm) settleWarmUp.resolve({ ms: 0, pdfBytes: 0 });
    slot.worker.on('message', (message: RenderWorkerMessage) => {
      switch (message.kind) {
        case 'warmed-up':
          slot.warm = true;
          settleWarmUp.resolve({ ms: Math.round(performance.now() - startedAt), pdfBytes: message.pdfBytes });
          if (!slot.job) slot.worker.unref();
          dispatch();
          return;
        case 'warm-up-failed':
          remove(slot, warmUpFailure(message.reason), new Error(`PDF render worker failed its warm-up: ${message.reason}`));
          void slot.worker.terminate();
          dispatch();
          return;
        default: {
          const job = slot.job;
          if (!job || job.id !== message.id) return;
          finish(slot);
          if (message.kind === 'failed') job.reject(new Error(`PDF report render failed: ${message.error}`));
          else job.resolve(Buffer.from(message.pdf.buffer, message.pdf.byteOffset, message.pdf.byteLength));
        }
      }
    });
    // A worker that dies takes its job (or its warm-up) with it; the next job starts a fresh one.
    const fail = (error: Error) => {
      remove(slot, warmUpFailure(error.message), error);
      dispatch();
    };
    slot.worker.on('error', fail);
    slot.worker.on('exit', (code) => {
      if (slots.includes(slot)) fail(new Error(`PDF render worker exited (code ${code})`));
    });
    // A warming worker keeps the process alive (someone waits for it); an idle warm one does not.
    if (slot.warm) slot.worker.unref();
    slots.push(slot);
    return slot;
  }

  /** Takes a worker out of the pool: its warm-up, if still under way, and its job fail. */
  function remove(slot: Slot, warmUpError: Error, jobError: Error) {
    const index = slots.indexOf(slot);
    if (index >= 0) slots.splice(index, 1);
    slot.settleWarmUp.reject(warmUpError);
    const job = slot.job;
    slot.job = null;
    job?.reject(jobError);
  }

  function finish(slot: Slot) {
    slot.job = null;
    // An idle worker does not keep the process alive; a busy one does, until its job is done.
    slot.worker.unref();
    dispatch();
  }

  function dispatch() {
    while (queue.length > 0 && !closed) {
      // A warm idle worker first; else one still warming up (the job waits for its warm-up); else a new one.
      const slot =
        slots.find((candidate) => candidate.job === null && candidate.warm) ??
        slots.find((candidate) => candidate.job === null) ??
        (slots.length < size ? start(false) : null);
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
    async warmUp() {
      if (closed) throw new Error('PDF render pool closed');
      const startedAt = performance.now();
      while (slots.length < size) start(true);
      const workers = await Promise.all(slots.map((slot) => slot.warmedUp));
      return { ms: Math.round(performance.now() - startedAt), workers };
    },
    get workerCount() {
      return slots.length;
    },
    async close() {
      closed = true;
      for (const job of queue.splice(0)) job.reject(new Error('PDF render pool closed'));
      const stopping = slots.splice(0);
      for (const slot of stopping) remove(slot, new Error('PDF render pool closed'), new Error('PDF render pool closed'));
      await Promise.all(stopping.map((slot) => slot.worker.terminate()));
    },
  };
}
