/** The parts of s3rver (which ships no types) the tests use. */
declare module 's3rver' {
  import type { Server } from 'node:http';
  import type { AddressInfo } from 'node:net';

  export default class S3rver {
    constructor(options: { address?: string; port?: number; silent?: boolean; directory: string; configureBuckets?: { name: string }[] });
    httpServer: Server;
    /** Its filesystem store: an object is files under `getResourcePath`. */
    store: {
      getResourcePath(bucket: string, key: string, resource: 'object' | 'object.md5' | 'metadata.json'): string;
      deleteObject(bucket: string, key: string): Promise<void>;
    };
    run(): Promise<AddressInfo>;
    close(): Promise<void>;
  }
}
