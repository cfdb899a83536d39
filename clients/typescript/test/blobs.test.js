// Blobs of any size against the real gateway: range reads, chunked uploads
// checked by SHA-256, resumed uploads and downloads, and the file helpers.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, writeFileSync, unlinkSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { connect, PIECE_BYTES, RpcError, TransferError } from '../src/index.js';
import { startGateway, tempDir, test, nextEvent } from './helpers.js';

/** @type {import('./helpers.js').Gateway} */
let gw;
const cleanups = [];

before(async () => {
  gw = await startGateway({ after: (fn) => cleanups.push(fn) });
});

after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

async function client(t, options = {}) {
  const c = await connect({ ...gw.address(), ...options });
  t.after(() => c.close());
  return c;
}

const sha256 = (b) => createHash('sha256').update(b).digest('hex');
// More than two pieces, and not a multiple of 3 (base64) nor of a piece.
const BIG = randomBytes(2 * PIECE_BYTES + 12_345);

test('readBlob with an offset reads a range and follows next_offset', async (t) => {
  const c = await client(t);
  const text = 'the cat sat on the mat\nthe end\n';
  const blob = await c.createBlob({ content: text });
  const piece = await c.readBlob({ blob_id: blob.blob_id, offset: 4, max_bytes: 8 });
  assert.deepEqual([piece.content, piece.offset, piece.next_offset], ['cat sat ', 4, 12]);
  assert.equal(piece.sha256, sha256(text));
  const last = await c.readBlob({ blob_id: blob.blob_id, mode: 'range', offset: 12, max_bytes: 1000 });
  assert.equal(last.content, text.slice(12));
  assert.equal(last.next_offset, null);
  await assert.rejects(c.readBlob({ blob_id: blob.blob_id, offset: text.length + 1 }),
    (err) => err instanceof RpcError && err.data.param === 'offset');
  await assert.rejects(c.readBlob({ blob_id: blob.blob_id, mode: 'sample_head', offset: 1 }),
    (err) => err instanceof RpcError && err.data.param === 'offset');
});

test('upload sends chunks and readBlobBytes and iterBlob read them back', async (t) => {
  const c = await client(t);
  const progress = [];
  const info = await c.upload(BIG, { kind: 'application/x-test', onProgress: (d, n) => progress.push([d, n]) });
  assert.equal(info.size_bytes, BIG.length);
  assert.equal(info.kind, 'application/x-test');
  assert.equal(info.sha256, sha256(BIG));
  assert.deepEqual(progress, [[PIECE_BYTES, BIG.length], [2 * PIECE_BYTES, BIG.length], [BIG.length, BIG.length]]);
  assert.ok((await c.readBlobBytes(info.blob_id)).equals(BIG));
  const pieces = [];
  for await (const p of c.iterBlob(info.blob_id, { offset: PIECE_BYTES })) pieces.push(p);
  assert.ok(pieces.length >= 2);
  assert.ok(Buffer.concat(pieces).equals(BIG.subarray(PIECE_BYTES)));
  const empty = await c.upload(new Uint8Array(0));
  assert.equal(empty.size_bytes, 0);
  assert.equal((await c.readBlobBytes(empty.blob_id)).length, 0);
});

test('put and get move files', async (t) => {
  const c = await client(t);
  const dir = tempDir(t);
  writeFileSync(join(dir, 'in.bin'), BIG);
  const info = await c.put(join(dir, 'in.bin'));
  assert.deepEqual(await c.get(info.blob_id, join(dir, 'out.bin')), info);
  assert.ok(readFileSync(join(dir, 'out.bin')).equals(BIG));
  assert.ok(!existsSync(join(dir, 'out.bin.part')));
  const text = 'héllo\n'.repeat(50_000);
  writeFileSync(join(dir, 'notes.txt'), text);
  const tinfo = await c.put(join(dir, 'notes.txt'), { kind: 'text/plain', chunkBytes: 100_000 });
  await c.get(tinfo.blob_id, join(dir, 'notes.copy'));
  assert.equal(readFileSync(join(dir, 'notes.copy'), 'utf8'), text);
});

test('get continues a .part file and drops a wrong one', async (t) => {
  const c = await client(t);
  const dir = tempDir(t);
  const dst = join(dir, 'out.bin');
  const part = `${dst}.part`;
  const info = await c.upload(BIG);
  writeFileSync(part, BIG.subarray(0, PIECE_BYTES + 7)); // a download cut short
  const seen = [];
  await c.get(info.blob_id, dst, { onProgress: (d) => seen.push(d) });
  assert.ok(readFileSync(dst).equals(BIG));
  assert.ok(seen[0] > PIECE_BYTES + 7);
  unlinkSync(dst);
  writeFileSync(part, Buffer.alloc(100, 'x')); // not the blob's bytes
  await assert.rejects(c.get(info.blob_id, dst), (err) => err instanceof TransferError && /removed/.test(err.message));
  assert.ok(!existsSync(part) && !existsSync(dst));
  await c.get(info.blob_id, dst); // the next attempt starts afresh
  assert.ok(readFileSync(dst).equals(BIG));
  unlinkSync(dst);
  writeFileSync(part, Buffer.concat([BIG, Buffer.from('more')])); // longer than the blob
  await c.get(info.blob_id, dst);
  assert.ok(readFileSync(dst).equals(BIG));
});

test('an upload is resumed by its id', async (t) => {
  const c = await client(t);
  const dir = tempDir(t);
  const data = randomBytes(10_000);
  writeFileSync(join(dir, 'data.bin'), data);
  const begun = await c.beginUpload({ size_bytes: data.length });
  assert.ok(begun.max_chunk_bytes >= 1000);
  let got;
  for (const off of [0, 1000, 2000]) { // an earlier attempt, cut after three chunks
    got = await c.uploadChunk({ upload_id: begun.upload_id, offset: off, content: data.subarray(off, off + 1000) });
  }
  assert.equal(got.received_bytes, 3000);
  const progress = [];
  const info = await c.put(join(dir, 'data.bin'), { uploadId: begun.upload_id, chunkBytes: 1000, onProgress: (d) => progress.push(d) });
  assert.equal(progress[0], 3000, 'the first resent chunk answers how far the upload got');
  assert.equal(info.sha256, sha256(data));
  assert.ok((await c.readBlobBytes(info.blob_id)).equals(data));
  await assert.rejects(c.put(join(dir, 'data.bin'), { uploadId: begun.upload_id, chunkBytes: 1000 }),
    (err) => err instanceof RpcError && err.stringCode === 'UPLOAD_NOT_FOUND');
});

test('transfers refuse bad inputs', async (t) => {
  const c = await client(t);
  const dir = tempDir(t);
  const begun = await c.beginUpload({ kind: 'text/plain', size_bytes: 3 });
  await c.uploadChunk({ upload_id: begun.upload_id, offset: 0, content: Buffer.from('abc') });
  await assert.rejects(c.finishUpload({ upload_id: begun.upload_id, sha256: '0'.repeat(64) }),
    (err) => err instanceof RpcError && err.data.param === 'sha256');
  await assert.rejects(c.beginUpload({ kind: 'nonsense', size_bytes: 1 }),
    (err) => err instanceof RpcError && err.data.param === 'kind');
  await assert.rejects(c.get(`blob:${'0'.repeat(32)}`, join(dir, 'none')),
    (err) => err instanceof RpcError && err.stringCode === 'BLOB_NOT_FOUND');
  assert.deepEqual(readdirSync(dir), [], 'no .part is left for a blob that does not exist');
  await assert.rejects(c.upload(Buffer.from('abc'), { uploadId: begun.upload_id, kind: 'text/plain' }), TypeError);
  await assert.rejects(c.upload(Buffer.from('abc'), { chunkBytes: 0 }), RangeError);
  assert.throws(() => c.upload(/** @type {any} */ ('text is not bytes')), TypeError);
  await assert.rejects(c.put(join(dir, 'missing')), { code: 'ENOENT' });
});

/** A loopback port that was free a moment ago. */
function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = /** @type {net.AddressInfo} */ (s.address());
      s.close(() => resolve(port));
    });
  });
}

test('an upload carries on across a gateway restart', async (t) => {
  const port = await freePort();
  const data = tempDir(t);
  const flags = ['--listen', `127.0.0.1:${port}`, '--data-dir', data];
  const first = await startGateway(t, flags);
  const c = await connect({ ...first.address(), reconnect: { maxAttempts: 20, initialDelayMs: 50, maxDelayMs: 500 } });
  t.after(() => c.close());
  const payload = randomBytes(5 * 4096);
  const begun = await c.beginUpload({ size_bytes: payload.length });
  await first.stop(); // frozen: the first chunk goes out and stays unanswered
  const disconnected = nextEvent(c, 'disconnect');
  const uploading = c.upload(payload, { uploadId: begun.upload_id, chunkBytes: 4096 });
  await first.kill();
  await disconnected;
  await startGateway(t, flags);
  const info = await uploading;
  assert.equal(info.sha256, sha256(payload));
  assert.ok((await c.readBlobBytes(info.blob_id)).equals(payload));
});
