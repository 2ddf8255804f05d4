import { platformName } from '../delivery/deliverable-builds.js';
import { escapeHtml, type RenderedEmail } from './html.js';

/** What a customer needs after buying: the key, where to download, how to start. */
export interface DeliveryDetails {
  appName: string;
  licenseKey: string;
  downloadUrl: string;
  /** ISO 8601: signed download links expire (7 days), the key does not. Absent: a permanent delivery page's link. */
  downloadExpiresAt?: string;
  appVersion?: string;
  /**
   * One link per platform the app ships (same lifetime as `downloadUrl`). With two or more the
   * email lists them all, so a buyer on Windows finds the Windows build whatever was uploaded last.
   */
  downloads?: { platform: string; url: string; version?: string }[];
}

/** "2025-03-09 14:05 UTC": unambiguous whatever the reader's locale. */
export function utcMinute(iso: string): string {
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
  // A single link keeps the one-line form; platforms are named only when there is a choice.
  const perPlatform = d.downloads && d.downloads.length > 1 ? d.downloads : undefined;
  const linkLifetime = d.downloadExpiresAt
    ? `${perPlatform ? 'These download links work' : 'This download link works'} until ${utcMinute(d.downloadExpiresAt)}. Your license key does not expire with them.`
    : 'This download page stays valid while your license is active.';
  const steps = gettingStartedSteps(d, 'Keep this email');
  const label = (p: { platform: string; version?: string }) => `${platformName(p.platform)}${p.version ? `, version ${p.version}` : ''}`;
  const textLinks = perPlatform
    ? [`Download ${d.appName} for your computer:`, ...perPlatform.flatMap((p) => [`- ${label(p)}:`, `  ${p.url}`])]
    : [`Download ${product}:`, d.downloadUrl];

  const text = [
    `Thank you for buying ${d.appName}.`,
    '',
    'Your license key:',
    '',
    `    ${d.licenseKey}`,
    '',
    ...textLinks,
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
${
  perPlatform
    ? `<p>Download ${e(d.appName)} for your computer:</p>
<ul>
${perPlatform.map((p) => `<li><a href="${e(p.url)}">${e(label(p))}</a></li>`).join('\n')}
</ul>
<p><small>${e(linkLifetime)}</small></p>`
    : `<p><a href="${e(d.downloadUrl)}">Download ${e(product)}</a><br>
<small>${e(linkLifetime)}</small></p>`
}
<h3>Getting started</h3>
<ol>
${steps.map((step) => `<li>${e(step)}</li>`).join('\n')}
</ol>
</body></html>
`;

  // One header line whatever the app's name holds.
  return { subject: `Your ${d.appName} license key`.replace(/\s+/g, ' '), text, html };
}
