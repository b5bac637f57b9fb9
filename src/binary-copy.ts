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
