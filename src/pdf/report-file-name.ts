/**
 * The report's file name, `rapport-activite-<learner>-<year>.pdf`: an ASCII `filename` every client
 * understands, and (RFC 6266 / RFC 5987) a UTF-8 `filename*` keeping the accents of the name when
 * it has any.
 */
// Letters that Unicode does not decompose into a Latin letter and an accent.
const latin: Record<string, string> = { ø: 'o', æ: 'ae', œ: 'oe', ß: 'ss', ł: 'l', đ: 'd', ð: 'd', þ: 'th', ı: 'i' };

function slug(text: string, keepAccents: boolean): string {
  const letters = keepAccents
    ? text.normalize('NFC').toLowerCase()
    : text
        .toLowerCase()
        .replace(/[øæœßłđðþı]/g, (letter) => latin[letter]!)
        .normalize('NFKD')
        .replace(/\p{M}/gu, '');
  const allowed = keepAccents ? /[^\p{L}\p{N}]+/gu : /[^a-z0-9]+/g;
  return letters
    .replace(allowed, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
    .replace(/-+$/, '');
}

export interface ReportFileName {
  ascii: string;
  unicode: string;
}

export function activityReportFileName(learner: { name: string | null; email: string }, year: number): ReportFileName {
  const source = learner.name?.trim() || learner.email;
  const name = (keepAccents: boolean) => `rapport-activite-${slug(source, keepAccents) || 'apprenant'}-${year}.pdf`;
  return { ascii: name(false), unicode: name(true) };
}

export function pdfAttachmentHeaders(fileName: ReportFileName): Record<string, string> {
  const ascii = `attachment; filename="${fileName.ascii}"`;
  return {
    'Content-Type': 'application/pdf',
    'Content-Disposition':
      fileName.unicode === fileName.ascii ? ascii : `${ascii}; filename*=UTF-8''${encodeURIComponent(fileName.unicode)}`,
  };
}
