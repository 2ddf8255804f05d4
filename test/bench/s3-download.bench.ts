import { randomBytes } from 'node:crypto';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { defineBench, expectStatus } from './lib.js';
import { spawnService } from './processes.js';
import { seedApp, seedDeveloper } from './seed.js';

const MIB = 1024 * 1024;
const MB = 1e6;
/** Each download's size; BENCH_S3_MB changes it. */
const OBJECT_BYTES = Number(process.env.BENCH_S3_MB ?? 8) * MIB;
const BUCKET = 'latchkey-bench';
/** s3rver's one account. */
const CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };

/**
 * Issue 24: downloads of a build stored in S3 (LATCHKEY_STORAGE=s3) through its signed link (link
 * check, database lookup, Range/ETag support, the object streamed from the bucket) against a bare
 * node:http server answering each request with one GetObject of the same object piped to the
 * response (`baselines/s3-get-object.ts`). Both read from the same S3 protocol server (s3rver, in a
 * process of its own), so the ratio is what Latchkey adds over the least a server can do.
 */
export default defineBench({
  title: 'Download of a build stored in S3, against a bare GetObject stream of the same object',
  async run(ctx) {
    // s3rver's listing tokens are DES-encrypted: OpenSSL 3's legacy provider.
    const store = await spawnService('s3rver', 'test/support/s3-store.ts', { S3_BUCKET: BUCKET, NODE_OPTIONS: '--openssl-legacy-provider' });
    try {
      const s3Env = {
        LATCHKEY_STORAGE: 's3',
        LATCHKEY_S3_BUCKET: BUCKET,
        LATCHKEY_S3_ENDPOINT: store.url,
        LATCHKEY_S3_FORCE_PATH_STYLE: 'true',
        ...CREDENTIALS,
      };
      const latchkey = await ctx.startLatchkey(s3Env);
      const dev = await seedDeveloper(latchkey.call);
      const app = await seedApp(latchkey.call, dev, 'Bench S3');

      const form = new FormData();
      form.append('platform', 'cross_platform');
      form.append('artifact', new Blob([randomBytes(OBJECT_BYTES)]), 'tool.bin');
      const uploaded = await fetch(`${latchkey.url}/v1/apps/${app.id}/builds`, { method: 'POST', headers: { 'x-api-key': dev.apiKey }, body: form });
      if (uploaded.status !== 201) throw new Error(`upload answered ${uploaded.status}: ${await uploaded.text()}`);
      const buildId = ((await uploaded.json()) as { id: string }).id;
      for (let poll = 0; ; poll++) {
        const build = expectStatus(await latchkey.call('GET', `/v1/apps/${app.id}/builds/${buildId}`, { apiKey: dev.apiKey }), 200, 'get build').body;
        if (build.status === 'READY') break;
        if (build.status === 'FAILED' || poll > 600) throw new Error(`build not READY: ${build.status} ${build.failure_reason ?? ''}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const link = new URL(expectStatus(await latchkey.call('GET', `/v1/apps/${app.id}/builds/${buildId}/download`, { apiKey: dev.apiKey }), 200, 'link').body.download_url);

      // The object the build's download reads (an upload served as uploaded: its artifact).
      const s3 = new S3Client({ endpoint: store.url, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
      const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `apps/${app.id}/builds/${buildId}/` }));
      s3.destroy();
      const key = listed.Contents?.[0]?.Key;
      if (!key || listed.Contents!.length !== 1) throw new Error(`expected the build's one object, found ${JSON.stringify(listed.Contents?.map((o) => o.Key))}`);
      const baseline = await ctx.startBaseline('s3-get-object', { S3_ENDPOINT: store.url, S3_BUCKET: BUCKET, S3_KEY: key, ...CREDENTIALS });

      // One request spec for both: the baseline answers any GET with the object.
      const [ours, base] = await ctx.measure(`GET ${OBJECT_BYTES / MIB} MiB from S3`, [latchkey, baseline], { path: `${link.pathname}${link.search}` });
      const rate = (m: typeof ours) => (m!.requestsPerSecond * OBJECT_BYTES) / MB;
      process.stdout.write(
        `s3-download: ${OBJECT_BYTES / MIB} MiB objects: latchkey ${rate(ours).toFixed(0)} MB/s (p50 ${ours!.p50Ms.toFixed(0)} ms, p99 ${ours!.p99Ms.toFixed(0)} ms), ` +
          `bare GetObject ${rate(base).toFixed(0)} MB/s (p50 ${base!.p50Ms.toFixed(0)} ms, p99 ${base!.p99Ms.toFixed(0)} ms), ratio ${(rate(ours) / rate(base)).toFixed(2)}\n`,
      );
      ctx.expectRatio('download throughput from S3 vs a bare GetObject stream', ours!, base!, 0.8);
    } finally {
      await store.stop();
    }
  },
});
