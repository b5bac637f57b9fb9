import { createRequire } from 'node:module';
import path from 'node:path';
import type { DocumentDefinition } from './document-definition';

// pdfmake 0.3 is CommonJS and exports one configured instance.
const require = createRequire(import.meta.url);

interface Pdfmake {
  setFonts(fonts: Record<string, Record<'normal' | 'bold' | 'italics' | 'bolditalics', string>>): void;
  setUrlAccessPolicy(allow: (url: string) => boolean): void;
  setLocalAccessPolicy(allow: (file: string) => boolean): void;
  createPdf(definition: DocumentDefinition): { getBuffer(): Promise<Buffer> };
}

let configured: Pdfmake | null = null;

function pdfmake(): Pdfmake {
  if (configured) return configured;
  const instance = require('pdfmake') as Pdfmake;
  const fonts = require('pdfmake/fonts/Roboto') as Record<string, Record<'normal' | 'bold' | 'italics' | 'bolditalics', string>>;
  const fontFolder = path.dirname(fonts.Roboto!.normal);
  instance.setFonts(fonts);
  // A report embeds nothing from outside: no download, no file but the fonts.
  instance.setUrlAccessPolicy(() => false);
  instance.setLocalAccessPolicy((file) => path.resolve(file).startsWith(fontFolder + path.sep));
  configured = instance;
  return instance;
}

/** The PDF bytes of a document definition. CPU-bound: the server calls it off the main thread. */
export async function renderPdf(definition: DocumentDefinition): Promise<Buffer> {
  return pdfmake().createPdf(definition).getBuffer();
}
