import { once } from 'node:events';
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import type { AsyncFlateStreamHandler, ZipInputFile } from 'fflate';

// The zip

/** Deflate level of the parts: level 1 is several times faster than zlib's default for a slightly larger file (docs/performance.md, « The workbook »). */
const compressionLevel = 1;
// An output buffer that holds a whole piece deflated (XML deflates to about an eighth), so that a
// piece takes zlib one pass.
const deflateOptions: zlib.ZlibOptions = { level: compressionLevel, chunkSize: 256 * 1024 };

const maxPartBytes = 0xffff_ffff;

/** Pieces of rows zlib may hold at once: it deflates one while the next is written, and the rows' source waits. */
const queuedPieces = 2;

// A gzip member is a 10-byte header (Node's zlib writes no name nor comment), the raw deflate a zip
// entry holds, and an 8-byte trailer: the CRC-32 of the data, then its size (both little-endian).
const gzipHeaderBytes = 10;
const gzipTrailerBytes = 8;

/**
 * One part of the workbook as a zip entry that fflate lays out: deflated by Node's zlib off the main
 * thread. zlib writes it as gzip, whose trailer carries the CRC-32 that a zip entry needs: zlib
 * computes it off the main thread too (zlib.crc32 on the main thread took a tenth of its time), and
 * the entry gets the deflate between the header and the trailer.
 */
export class DeflatedPart implements ZipInputFile {
  readonly compression = 8;
  // Bits 1 and 2 of the zip's flags: the deflate's speed (3, "super fast", for level 1).
  readonly flag = 3;
  readonly mtime = new Date();
  size = 0;
  crc = 0;
  ondata?: AsyncFlateStreamHandler;
  readonly #deflate = zlib.createGzip(deflateOptions);
  #headerToSkip = gzipHeaderBytes;
  /** The last bytes of zlib's output so far, held back until more come: at the end, the trailer. */
  #held: Buffer = Buffer.alloc(0);
  /** Resolves once the deflate is closed: ended, or stopped with the workbook. */
  readonly #closed: Promise<unknown>;
  /** Pieces of rows given to zlib and not deflated yet, oldest first: each resolves once deflated. */
  readonly #queued: Promise<void>[] = [];

  constructor(readonly filename: string) {
    this.#deflate.on('data', (bytes: Buffer) => this.#gzipped(bytes));
    this.#deflate.on('end', () => {
      this.crc = this.#held.readUInt32LE(0);
      this.ondata?.(null, new Uint8Array(0), true);
    });
    this.#closed = once(this.#deflate, 'close').catch(() => undefined);
  }

  /**
   * Deflates a piece of rows (SheetRowsWriter), then waits while zlib holds more than `queuedPieces`
   * of them: it deflates one while the next is written, and the rows' source waits with the writer.
   * `deflated` is called once zlib is done with the piece's memory.
   */
  async writePiece(piece: Buffer, deflated: () => void): Promise<void> {
    let resolve!: () => void;
    this.#queued.push(new Promise<void>((settle) => (resolve = settle)));
    this.write(piece, () => {
      deflated();
      resolve();
    });
    while (this.#queued.length > queuedPieces) await Promise.race([this.#queued.shift(), this.#closed]);
  }

  /** Deflates the bytes; `deflated` is called once zlib is done with them. */
  write(bytes: Buffer | string, deflated?: () => void): void {
    const buffer = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
    this.size += buffer.length;
    // fflate writes no ZIP64: past 4 GiB a part's sizes would be wrong. A sheet's 1,048,575 rows
    // reach it only at 4 KB of XML each (an export's rows take 1 KB): a failed file, never a corrupt one.
    if (this.size > maxPartBytes) throw new Error(`${this.filename} exceeds the 4 GiB of a zip entry without ZIP64`);
    this.#deflate.write(buffer, deflated);
  }

  end(text: string): void {
    this.write(text);
    this.#deflate.end();
  }

  terminate(): void {
    this.#deflate.destroy();
  }

  /** Passes zlib's gzip output on without its header, holding back the last 8 bytes (the trailer, once it ends). */
  #gzipped(output: Buffer): void {
    let bytes = output;
    if (this.#headerToSkip > 0) {
      const skipped = Math.min(this.#headerToSkip, bytes.length);
      bytes = bytes.subarray(skipped);
      this.#headerToSkip -= skipped;
    }
    if (bytes.length === 0) return;
    if (bytes.length < gzipTrailerBytes) {
      bytes = Buffer.concat([this.#held, bytes]);
      if (bytes.length <= gzipTrailerBytes) {
        this.#held = bytes;
        return;
      }
    } else this.#pass(this.#held);
    this.#pass(bytes.subarray(0, bytes.length - gzipTrailerBytes));
    this.#held = bytes.subarray(bytes.length - gzipTrailerBytes);
  }

  #pass(bytes: Buffer): void {
    // zlib's output is never over a SharedArrayBuffer.
    if (bytes.length > 0) this.ondata?.(null, bytes as Buffer<ArrayBuffer>, false);
  }
}

/**
 * The workbook's bytes as a stream that reads at its reader's pace: the writing waits on `room()`
 * whenever the stream holds more than it wants, and the rows' source waits with it.
 */
export class WorkbookOutput extends Readable {
  #wanted: (() => void) | null = null;

  constructor(private readonly stopped: () => void) {
    // 64 KB of zipped workbook is plenty to keep the client's connection busy.
    super({ highWaterMark: 64 * 1024 });
  }

  override _read(): void {
    this.#wanted?.();
    this.#wanted = null;
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.stopped();
    this.#wanted?.();
    callback(error);
  }

  /** Resolves once the reader wants more bytes or has gone away (`destroyed` then says so). */
  room(): Promise<void> {
    if (this.destroyed || this.readableLength < this.readableHighWaterMark) return Promise.resolve();
    return new Promise((resolve) => {
      this.#wanted = resolve;
    });
  }
}
