// @ts-check
/**
 * Blobs of any size: range reads, chunked uploads checked by SHA-256, and
 * the put/get file helpers built on them (docs/blobs.md, "Large blobs").
 *
 * Every call a transfer makes may be repeated safely: a chunk re-sent at its
 * offset with the same bytes changes nothing, and a range read only reads.
 * So a transfer whose connection drops carries on where the last answer left
 * it once a client with `reconnect` is connected again, and a transfer cut
 * for good is resumed by a later call (`uploadId` for an upload, the
 * `FILE.part` left behind for a download).
 * @module
 */
import { createHash } from 'node:crypto';
import { open, rename, rm, stat } from 'node:fs/promises';
import { RpcError, SkillgateError, TransferError } from './errors.js';

/**
 * The bytes of one upload_chunk or range read. Fixed rather than
 * begin_upload's max_chunk_bytes, so that a resumed upload cuts the data
 * where the first attempt did (the gateway takes a chunk re-sent with the
 * bytes it holds, not the same bytes cut differently); its base64 fits the
 * default 1 MiB message. `skillgate blob put` uses the same size.
 */
export const PIECE_BYTES = 512 * 1024;

/** How often one call of a transfer is repeated after losing its connection. */
const MAX_RETRIES = 5;

/**
 * @typedef {import('./client.js').Client} Client
 * @typedef {import('../index.js').TransferOptions} TransferOptions
 * @typedef {import('../index.js').UploadOptions} UploadOptions
 * @typedef {import('../index.js').ReadBlobResult} ReadBlobResult
 * @typedef {import('../index.js').CreateBlobResult} CreateBlobResult
 */

/**
 * Calls a method of a transfer, again after a lost connection when the
 * client reconnects (the call then waits for the new session).
 * @param {Client} client
 * @param {string} method
 * @param {Record<string, any>} params
 * @param {TransferOptions} o
 */
async function again(client, method, params, o) {
  const retries = client.reconnectPolicy ? MAX_RETRIES : 0;
  const callOptions = { timeoutMs: o.timeoutMs, signal: o.signal };
  for (let attempt = 0; ; attempt++) {
    try {
      return await client.call(method, params, callOptions);
    } catch (err) {
      if (attempt >= retries || !lostConnection(err)) throw err;
      // A draining gateway refuses calls before it closes the connection.
      if (err instanceof RpcError && err.stringCode === 'SERVER_SHUTDOWN') {
        await new Promise((resolve) => setTimeout(resolve, err.retry?.suggestedDelayMs ?? 500));
      }
    }
  }
}

/** @param {unknown} err */
function lostConnection(err) {
  if (!(err instanceof SkillgateError)) return false;
  // A CloseReasonError (the server's _CloseReason) is an RpcError too.
  return err.stringCode === 'CONNECTION_CLOSED' || err.stringCode === 'SERVER_SHUTDOWN' ||
    err.stringCode === 'KEEPALIVE' || err.name === 'CloseReasonError';
}

/**
 * Random access to an upload's data: bytes in memory or an open file.
 * @typedef {{size: number, readAt: (offset: number, n: number) => Promise<Buffer>}} Source
 */

/** @param {Uint8Array} data @returns {Source} */
function bytesSource(data) {
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return { size: buf.length, readAt: async (offset, n) => buf.subarray(offset, offset + n) };
}

/** @param {import('node:fs/promises').FileHandle} fh @param {number} size @returns {Source} */
function fileSource(fh, size) {
  return {
    size,
    readAt: async (offset, n) => {
      const buf = Buffer.alloc(n);
      let got = 0;
      while (got < n) {
        const { bytesRead } = await fh.read(buf, got, n - got, offset + got);
        if (bytesRead === 0) throw new TransferError(`the file changed during the upload: ${n} bytes at ${offset} are gone`);
        got += bytesRead;
      }
      return buf;
    },
  };
}

/**
 * Uploads data in chunks and finishes with its SHA-256.
 * @param {Client} client
 * @param {Uint8Array} data
 * @param {UploadOptions} [o]
 * @returns {Promise<CreateBlobResult>}
 */
export function upload(client, data, o = {}) {
  if (!(data instanceof Uint8Array)) throw new TypeError('upload: data must be a Uint8Array (a Buffer); for a file use put()');
  return uploadSource(client, bytesSource(data), o);
}

/**
 * Uploads a file in chunks.
 * @param {Client} client
 * @param {string} path
 * @param {UploadOptions} [o]
 * @returns {Promise<CreateBlobResult>}
 */
export async function put(client, path, o = {}) {
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    return await uploadSource(client, fileSource(fh, size), o);
  } finally {
    await fh.close();
  }
}

/**
 * @param {Client} client
 * @param {Source} src
 * @param {UploadOptions} o
 * @returns {Promise<CreateBlobResult>}
 */
async function uploadSource(client, src, o) {
  if (o.chunkBytes !== undefined && !(Number.isInteger(o.chunkBytes) && o.chunkBytes > 0)) {
    throw new RangeError(`upload: chunkBytes must be a positive integer, got ${o.chunkBytes}`);
  }
  let piece = o.chunkBytes ?? PIECE_BYTES;
  let uploadId = o.uploadId;
  if (uploadId === undefined) {
    const begun = await client.call('begin_upload', { kind: o.kind ?? 'application/octet-stream', size_bytes: src.size },
      { timeoutMs: o.timeoutMs, signal: o.signal });
    uploadId = /** @type {string} */ (begun.upload_id);
    piece = Math.min(piece, begun.max_chunk_bytes);
  } else if (o.kind !== undefined) {
    throw new TypeError('upload: kind is given to beginUpload; a resumed upload keeps the kind it began with');
  }
  const digest = createHash('sha256');
  let offset = 0;
  while (offset < src.size) {
    const chunk = await src.readAt(offset, Math.min(piece, src.size - offset));
    const params = { upload_id: uploadId, offset, content: chunk.toString('base64'), encoding: 'base64' };
    const received = (await again(client, 'upload_chunk', params, o)).received_bytes;
    const end = offset + chunk.length;
    if (!Number.isInteger(received) || received < end || received > src.size) {
      throw new TransferError(`upload_chunk answered received_bytes ${received} after a chunk ending at ${end}`);
    }
    digest.update(chunk);
    if (received > end) digest.update(await src.readAt(end, received - end)); // resumed: the gateway holds more
    offset = received;
    o.onProgress?.(offset, src.size);
  }
  return again(client, 'finish_upload', { upload_id: uploadId, sha256: digest.digest('hex') }, o);
}

/**
 * Yields a blob's pieces from offset to its end: each range answer and its
 * bytes.
 * @param {Client} client
 * @param {string} blobId
 * @param {number} offset
 * @param {TransferOptions} o
 * @returns {AsyncGenerator<{piece: ReadBlobResult, data: Buffer}>}
 */
async function* pieces(client, blobId, offset, o) {
  for (;;) {
    /** @type {ReadBlobResult} */
    const piece = await again(client, 'read_blob', { blob_id: blobId, mode: 'range', offset, max_bytes: PIECE_BYTES }, o);
    const data = Buffer.from(piece.content, piece.encoding === 'base64' ? 'base64' : 'utf8');
    yield { piece, data };
    offset += data.length;
    if (piece.next_offset === null || piece.next_offset === undefined) return;
    if (piece.next_offset !== offset) {
      throw new TransferError(`read_blob answered next_offset ${piece.next_offset} after ${offset} bytes`);
    }
  }
}

/**
 * A blob's bytes from an offset to its end, piece by piece; unchecked
 * (readBlobBytes and get check the SHA-256).
 * @param {Client} client
 * @param {string} blobId
 * @param {TransferOptions & {offset?: number}} [o]
 * @returns {AsyncGenerator<Buffer>}
 */
export async function* iterBlob(client, blobId, o = {}) {
  for await (const { data } of pieces(client, blobId, o.offset ?? 0, o)) yield data;
}

/**
 * The whole blob in memory, checked against its SHA-256.
 * @param {Client} client
 * @param {string} blobId
 * @param {TransferOptions} [o]
 * @returns {Promise<Buffer>}
 */
export async function readBlobBytes(client, blobId, o = {}) {
  const digest = createHash('sha256');
  const parts = [];
  let want = '';
  for await (const { piece, data } of pieces(client, blobId, 0, o)) {
    digest.update(data);
    parts.push(data);
    want = piece.sha256 ?? '';
  }
  const got = digest.digest('hex');
  if (got !== want) throw new TransferError(`the bytes read have sha256 ${got}, the blob ${want}`);
  return Buffer.concat(parts);
}

/**
 * Downloads a blob into path via path.part, which becomes path once its
 * bytes match the blob's SHA-256. A .part left by a cut download is
 * continued; one that does not match is removed.
 * @param {Client} client
 * @param {string} blobId
 * @param {string} path
 * @param {TransferOptions} [o]
 * @returns {Promise<CreateBlobResult>}
 */
export async function get(client, blobId, path, o = {}) {
  const part = `${path}.part`;
  let last;
  let got;
  try {
    [last, got] = await download(client, blobId, part, o);
  } catch (err) {
    if ((await stat(part).catch(() => undefined))?.size === 0) await rm(part, { force: true }); // nothing to continue from
    throw err;
  }
  const want = last.sha256 ?? '';
  if (got !== want) {
    await rm(part, { force: true });
    throw new TransferError(`the downloaded bytes have sha256 ${got}, the blob ${want}: ${part} removed`);
  }
  await rename(part, path);
  return { blob_id: last.blob_id, size_bytes: last.size_bytes, kind: last.kind, sha256: want };
}

/**
 * @param {Client} client
 * @param {string} blobId
 * @param {string} part
 * @param {TransferOptions} o
 * @returns {Promise<[ReadBlobResult, string]>}
 */
async function download(client, blobId, part, o) {
  const fh = await open(part, 'a+');
  try {
    const digest = createHash('sha256');
    for await (const chunk of fh.createReadStream({ start: 0, autoClose: false })) digest.update(chunk);
    const { size } = await fh.stat();
    try {
      return await append(client, blobId, fh, size, digest, o);
    } catch (err) {
      if (size === 0 || !(err instanceof RpcError) || err.data?.param !== 'offset') throw err;
    }
    // The .part is longer than the blob: it was another blob's.
    await fh.truncate(0);
    return await append(client, blobId, fh, 0, createHash('sha256'), o);
  } finally {
    await fh.close();
  }
}

/**
 * @param {Client} client
 * @param {string} blobId
 * @param {import('node:fs/promises').FileHandle} fh opened for appending
 * @param {number} offset
 * @param {import('node:crypto').Hash} digest
 * @param {TransferOptions} o
 * @returns {Promise<[ReadBlobResult, string]>}
 */
async function append(client, blobId, fh, offset, digest, o) {
  /** @type {ReadBlobResult | undefined} */
  let last;
  for await (const { piece, data } of pieces(client, blobId, offset, o)) {
    await fh.write(data);
    digest.update(data);
    offset += data.length;
    last = piece;
    o.onProgress?.(offset, piece.size_bytes);
  }
  return [/** @type {ReadBlobResult} */ (last), digest.digest('hex')];
}
