/** Text as HTML: the five characters that could open markup or end an attribute, as references. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}
