import { escapeHtml } from './html.js';

/** What a customer needs after buying: the key, where to download, how to start. */
export interface DeliveryDetails {
  appName: string;
  licenseKey: string;
  downloadUrl: string;
  /** ISO 8601: signed download links expire (7 days), the key does not. Absent: a permanent delivery page's link. */
  downloadExpiresAt?: string;
  appVersion?: string;
}

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

/** "2025-03-09 14:05 UTC": unambiguous whatever the reader's locale. */
function utcMinute(iso: string): string {
  return `${new Date(iso).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

const productName = (d: Pick<DeliveryDetails, 'appName' | 'appVersion'>) => (d.appVersion ? `${d.appName} ${d.appVersion}` : d.appName);

/** The getting-started steps of the delivery email and the hosted delivery page; `keep` names what to keep. */
export function gettingStartedSteps(d: Pick<DeliveryDetails, 'appName' | 'appVersion'>, keep: string): string[] {
  return [
    `Download ${productName(d)} with the link above and install it.`,
    `Start ${d.appName}. When it asks for a license key, paste the key above.`,
    `${keep}: the key is what unlocks ${d.appName} if you reinstall it or move to another computer.`,
  ];
}

/** The license delivery email, as plain text and as simple HTML with every value escaped. */
export function renderDeliveryEmail(d: DeliveryDetails): RenderedEmail {
  const product = productName(d);
  const linkLifetime = d.downloadExpiresAt
    ? `This download link works until ${utcMinute(d.downloadExpiresAt)}. Your license key does not expire with it.`
    : 'This download page stays valid while your license is active.';
  const steps = gettingStartedSteps(d, 'Keep this email');

  const text = [
    `Thank you for buying ${d.appName}.`,
    '',
    'Your license key:',
    '',
    `    ${d.licenseKey}`,
    '',
    `Download ${product}:`,
    d.downloadUrl,
    `(${linkLifetime})`,
    '',
    'Getting started',
    ...steps.map((step, i) => `${i + 1}. ${step}`),
    '',
  ].join('\n');

  const e = escapeHtml;
  const html = `<!doctype html>
<html><body style="font-family: sans-serif; line-height: 1.5">
<p>Thank you for buying ${e(d.appName)}.</p>
<p>Your license key:</p>
<p style="font-family: monospace; font-size: 1.25em"><strong>${e(d.licenseKey)}</strong></p>
<p><a href="${e(d.downloadUrl)}">Download ${e(product)}</a><br>
<small>${e(linkLifetime)}</small></p>
<h3>Getting started</h3>
<ol>
${steps.map((step) => `<li>${e(step)}</li>`).join('\n')}
</ol>
</body></html>
`;

  // One header line whatever the app's name holds.
  return { subject: `Your ${d.appName} license key`.replace(/\s+/g, ' '), text, html };
}
