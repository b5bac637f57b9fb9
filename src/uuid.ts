const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether a text is a uuid as the API writes its ids (hyphenated, any case), before PostgreSQL reads it as one. */
export function isUuid(text: string): boolean {
  return uuidShape.test(text);
}
