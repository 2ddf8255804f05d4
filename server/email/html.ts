/** An email as rendered: its subject, a plain-text part and an HTML part. */
export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text made safe for HTML element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/** An email of plain paragraphs: the text part one paragraph per blank-line-separated block, the HTML part one `<p>` each. */
export function paragraphsEmail(subject: string, paragraphs: string[]): RenderedEmail {
  return {
    subject,
    text: `${paragraphs.join('\n\n')}\n`,
    html: `<!doctype html>\n<html><body style="font-family: sans-serif; line-height: 1.5">\n${paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`).join('\n')}\n</body></html>\n`,
  };
}
