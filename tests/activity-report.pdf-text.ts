import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';

export interface PdfText {
  pageCount: number;
  /** Per page, its lines top to bottom: text pieces on one baseline joined by one space. */
  pages: string[][];
  /** Every line of every page. */
  lines: string[];
  info: Record<string, unknown>;
}

/** Normalises what pdf.js returns: no-break spaces become spaces, runs of spaces one. */
export function normalise(text: string): string {
  return text
    .replace(/[\u00a0\u202f]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * The text of a PDF as a reader sees it, line by line, read back with pdf.js (not with the library
 * that wrote it), so that a test checks what is really in the file.
 */
export async function extractPdfText(pdf: Uint8Array): Promise<PdfText> {
  const document = await getDocument({ data: new Uint8Array(pdf), isEvalSupported: false, disableFontFace: true, verbosity: 0 }).promise;
  const pages: string[][] = [];
  for (let number = 1; number <= document.numPages; number += 1) {
    const page = await document.getPage(number);
    const content = await page.getTextContent();
    const rows: { y: number; pieces: { x: number; width: number; text: string }[] }[] = [];
    for (const item of content.items) {
      if (!('str' in item) || item.str.trim() === '') continue;
      const [x, y] = [item.transform[4] as number, item.transform[5] as number];
      // Pieces of one table row sit on one baseline, give or take a point.
      let row = rows.find((candidate) => Math.abs(candidate.y - y) < 1.5);
      if (!row) {
        row = { y, pieces: [] };
        rows.push(row);
      }
      row.pieces.push({ x, width: item.width, text: item.str });
    }
    rows.sort((a, b) => b.y - a.y);
    pages.push(
      rows.map((row) => {
        const pieces = row.pieces.sort((a, b) => a.x - b.x);
        // Pieces that touch belong to one word (pdfmake cuts after a hyphen); a gap is a space.
        return normalise(
          pieces
            .map((piece, index) => {
              const previous = pieces[index - 1];
              return previous && piece.x - (previous.x + previous.width) < 0.5 ? piece.text : ` ${piece.text}`;
            })
            .join(''),
        );
      }),
    );
  }
  const metadata = await document.getMetadata();
  await document.destroy();
  return { pageCount: document.numPages, pages, lines: pages.flat(), info: metadata.info as Record<string, unknown> };
}
