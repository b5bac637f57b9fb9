// PostgreSQL's binary COPY output (db/connection.ts copyOut, copyOutWhole): a signature,
// flags and a header extension; then each row as its number of fields (int16) and each field as its
// length (int32, -1 for null) and its bytes; -1 at the end. The CSV, the workbook and the JSON
// pages read it.
const copySignature = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const copyHeaderLength = copySignature.length + 8;

/**
 * Where the rows start in the first bytes of a binary COPY output, or null while its header is not
 * whole yet (wait for more bytes). Throws on anything else than a binary COPY output.
 */
export function copyRowsStart(input: Buffer): number | null {
  if (input.length < copyHeaderLength) return null;
  if (!input.subarray(0, copySignature.length).equals(copySignature)) throw new Error('not a binary COPY output');
  const start = copyHeaderLength + input.readUInt32BE(copySignature.length + 4);
  return input.length < start ? null : start;
}

// An export allocates buffers that die at once (the socket's reads of COPY, its chunks, the CSV's
// output pieces) and few objects. V8 frees dead buffers when it collects its young generation, which
// objects fill (4 MB, --max-semi-space-size): during a CSV export, every 6 MB of COPY bytes, between
// which dead buffers reached 30 MB. Collected every 2 MB, the quiz-answers export (77 MB of CSV, 3 in
// a row) added 6-14 MB to the server's RSS at ready instead of 35-55 on Node 24 (peak 237-249 MB
// against 276-294), 8-12 instead of 32 on Node 20; the export's time did not change.
const copyBytesBetweenYoungCollections = 2 * 1024 * 1024;
let copyBytesSinceYoungCollection = 0;

/**
 * Counts the COPY bytes an export has read (every export of the process together) and, every 2 MB,
 * collects V8's young generation: its dead buffers go back to the allocator as they die, for about
 * 1 ms each time. `gc` exists as `npm start` runs node (--expose-gc); run otherwise (tsx), this only counts.
 */
function countExportedCopyBytes(bytes: number): void {
  copyBytesSinceYoungCollection += bytes;
  if (copyBytesSinceYoungCollection < copyBytesBetweenYoungCollections) return;
  copyBytesSinceYoungCollection = 0;
  globalThis.gc?.({ type: 'minor' });
}

/**
 * The chunks of an export's COPY output as its reader takes them (the CSV and the workbook have one
 * each): each one after the bytes the last left unread (a row cut at its end, a header not whole
 * yet), and counted (countExportedCopyBytes). The two are joined in one of two buffers reused in
 * turn: the unread bytes lie in the other one (or in their chunk), and what was read from the one
 * before last is done with. A buffer taken anew for nearly every chunk (a chunk rarely ends on a
 * row's end) made V8 collect far more often, and on Node 24 let its dead memory reach 60 MB during
 * an export (issue 17).
 */
export class ExportCopyInput {
  readonly #buffers = [Buffer.alloc(0), Buffer.alloc(0)];
  #turn = 0;
  #unread: Buffer | null = null;

  /** The next chunk to read: the bytes left unread, if any, followed by `chunk`'s. */
  next(chunk: Buffer): Buffer {
    countExportedCopyBytes(chunk.length);
    const unread = this.#unread;
    if (unread === null) return chunk;
    this.#unread = null;
    const length = unread.length + chunk.length;
    let buffer = this.#buffers[this.#turn]!;
    if (buffer.length < length) {
      buffer = Buffer.allocUnsafe(Math.max(length, 2 * buffer.length));
      this.#buffers[this.#turn] = buffer;
    }
    this.#turn = 1 - this.#turn;
    unread.copy(buffer, 0);
    chunk.copy(buffer, unread.length);
    return buffer.subarray(0, length);
  }

  /** The end of the chunk just read that must wait for the next (a view of it: `next` copies it). */
  leaveUnread(bytes: Buffer): void {
    this.#unread = bytes;
  }
}

/** A row's field count (int16, -1 for the trailer), read in place: the readers have checked its bytes are there. */
export function int16At(bytes: Uint8Array, at: number): number {
  return ((bytes[at]! << 24) | (bytes[at + 1]! << 16)) >> 16;
}

/** A field's length (int32, -1 for null), read in place: the readers have checked its bytes are there. */
export function int32At(bytes: Uint8Array, at: number): number {
  return (bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!;
}

// Shorter runs are copied byte by byte: a native copy costs more than it saves on them.
const nativeCopyFrom = 48;

/**
 * Writes `source[start, end)` at `at` in `target`; returns where it ends. The writers of the exports
 * and pages (CSV, workbook, JSON) copy fields and markup from COPY bytes with it.
 */
export function copyBytes(source: Uint8Array, start: number, end: number, target: Buffer, at: number): number {
  if (end - start >= nativeCopyFrom) {
    target.set(source.subarray(start, end), at);
    return at + end - start;
  }
  for (let i = start; i < end; i++) target[at++] = source[i]!;
  return at;
}
