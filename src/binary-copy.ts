// PostgreSQL's binary COPY output (the exports' source, db/connection.ts copyOut): a signature,
// flags and a header extension; then each row as its number of fields (int16) and each field as its
// length (int32, -1 for null) and its bytes; -1 at the end. The CSV and the workbook read it.
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
