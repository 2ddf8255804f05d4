import { Readable } from 'node:stream';
import { z } from 'zod';
import { ActivationRequestBody, type OfflineActivation } from '../activations/offline-activation.js';
import type { Entitlements } from '../entitlements/entitlement.js';
import { RequestError } from '../errors.js';
import { setRateLimitHeaders } from '../http/rate-window.js';
import type { MultipartSpec, UploadedFile } from '../http/multipart.js';
import { defineRoute } from '../http/route.js';
import { sendPage } from './html-page.js';
import { offlineActivationFormPage } from './offline-activation-page.js';

/** A request file is a few hundred bytes; anything much larger is not one. */
const MAX_REQUEST_FILE_BYTES = 16 * 1024;

/** The uploaded request file, held in memory (it is tiny; the parser stops past the limit). */
const requestFile: MultipartSpec<Buffer> = {
  fileField: 'request',
  fileDescription: 'The activation request file the app saved',
  maxFileBytes: MAX_REQUEST_FILE_BYTES,
  receiver: {
    receive: async (stream: Readable) => {
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks);
    },
    discard: async () => undefined,
  },
};

// Lenient on purpose: whatever is uploaded gets an HTML answer with the form again, not a JSON error.
const OfflineActivationForm = z.object({ request: z.custom<UploadedFile<Buffer>>().optional() });

const NOT_A_REQUEST = 'This is not an activation request file. Choose the file the app saved when you asked it to activate without internet.';

function parseRequestFile(upload: UploadedFile<Buffer> | undefined) {
  if (!upload) return undefined;
  try {
    const parsed = ActivationRequestBody.safeParse(JSON.parse(upload.stored.toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a refusal came after the file's license key was found valid for its app: only then does the
 * page name the app and its seller (a file naming any app id must not make the page tell its name).
 */
const keyAccepted = (err: RequestError) => err.code !== 'INVALID_LICENSE_KEY' && err.status !== 429;

/** The hosted offline activation page ({app_url}/activate-offline, served at this server's public base URL). */
export function offlineActivationPageRoutes(offline: OfflineActivation, products: Pick<Entitlements, 'productOf'>) {
  const description =
    'Server-rendered, escaped, under a strict Content-Security-Policy (no script; its form posts to this origin), ' +
    'with `Referrer-Policy: no-referrer` and `Cache-Control: no-store`; it works without JavaScript.';
  return [
    defineRoute({
      method: 'get',
      path: '/activate-offline',
      operationId: 'offlineActivationPage',
      tag: 'Public',
      auth: 'none',
      rateLimit: 'general',
      summary: 'Hosted offline activation page (HTML): the form to upload an activation request file',
      description: `The form posts the file to POST /activate-offline. ${description}`,
      fileResponse: { description: 'The HTML page', contentType: 'text/html' },
      handler: async ({ ctx }) => sendPage(ctx, 200, offlineActivationFormPage()),
    }),
    defineRoute({
      method: 'post',
      path: '/activate-offline',
      operationId: 'offlineActivationPageSubmit',
      tag: 'Public',
      auth: 'none',
      rateLimit: 'runtime',
      summary: "The offline activation page's form: answers the uploaded request file with the license file, as a download",
      description:
        'Same rules and limits as POST /v1/licenses/offline-activation. Success answers the license file as an attachment (`license.lic`); ' +
        'a file that is not a request file (400), or one the activation refuses (with the status of the JSON endpoint: 401, 403, 404, 409, 429 with ' +
        `\`Retry-After\`), shows the form again with the reason. A request file over ${MAX_REQUEST_FILE_BYTES} bytes: 413. ${description}`,
      multipart: requestFile,
      body: OfflineActivationForm,
      errors: [401, 403, 404, 409, 413],
      fileResponse: { description: 'The license file', contentType: 'application/octet-stream' },
      handler: async ({ body, ctx }) => {
        const request = parseRequestFile(body.request);
        if (!request) return sendPage(ctx, 400, offlineActivationFormPage({ error: { message: NOT_A_REQUEST } }));
        try {
          const { license_file } = await offline.activateOffline(request, (decision) => setRateLimitHeaders(ctx, decision));
          ctx.set('Content-Disposition', 'attachment; filename="license.lic"');
          ctx.set('Cache-Control', 'no-store');
          ctx.set('X-Content-Type-Options', 'nosniff');
          ctx.type = 'application/octet-stream';
          ctx.body = `${license_file}\n`;
        } catch (err) {
          if (!(err instanceof RequestError) || err.status >= 500) throw err;
          for (const [name, value] of Object.entries(err.extra.headers ?? {})) ctx.set(name, value);
          const product = keyAccepted(err) ? await products.productOf(request.app_id) : undefined;
          sendPage(ctx, err.status, offlineActivationFormPage({ error: err, product }));
        }
      },
    }),
  ];
}
