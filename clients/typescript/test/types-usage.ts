// Compiled by `npm run typecheck` (never run): checks that index.d.ts
// describes the package as a TypeScript user would call it.
import {
  Client,
  connect,
  RpcError,
  CloseReasonError,
  FrameParser,
  encodeFrame,
  type InitializeResult,
  type RunResult,
  type ClientOptions,
  type ListSkillsParams,
  type CreateBlobResult,
  PIECE_BYTES,
  TransferError,
} from '@skillgate/client';

async function main(): Promise<void> {
  const options: ClientOptions = {
    host: '127.0.0.1',
    port: 7400,
    token: process.env.SKILLGATE_TOKEN,
    tls: { ca: 'PEM', cert: 'PEM', key: 'PEM' },
    keepalive: { intervalMs: 10_000, timeoutMs: 5_000 },
    reconnect: { maxAttempts: 3 },
  };
  const client = await connect(options);
  const session: InitializeResult | undefined = client.session;
  console.log(session?.session_id);

  const { skills, next_cursor } = await client.listSkills({ detail: 'summary', limit: 10 });
  const first: string | undefined = skills[0]?.name;
  const cursor: string | null = next_cursor;
  const { skill } = await client.describeSkill({ name: first ?? 'acme.math.add', detail: 'full' });
  const files: string[] = (skill.files ?? []).map((f) => f.path);
  const file = await client.readSkillFile({ name: skill.name, path: files[0] ?? 'SKILL.md', max_bytes: 100 });
  const next: number | undefined = file.next_offset;
  const run: RunResult = await client.executeSkill({ name: 'acme.math.add', args: { a: 1, b: 2 } }, { timeoutMs: 60_000 });
  if (run.status === 'failed') console.log(run.error?.type);
  const code = await client.runCode({ code: 'def main(args):\n    return {}\n', mount_skills: ['acme.math.add'] });
  const blob = await client.createBlob({ content: new Uint8Array([1, 2, 3]) });
  const text = await client.createBlob({ content: 'hello', kind: 'text/plain' });
  const read = await client.readBlob({ blob_id: blob.blob_id, mode: 'full' });
  const guide = await client.loadSkillsProtocolGuide({ signal: AbortSignal.timeout(1000) });
  const generic = await client.call<{ skills: unknown[] }>('ListSkills', {});
  const typedParams: ListSkillsParams = { limit: 1 };
  await client.call('list_skills', typedParams);
  console.log(cursor, next, code.output, text.sha256, read.content, guide.content, generic.skills.length);
  const range = await client.readBlob({ blob_id: blob.blob_id, offset: 0, max_bytes: 1024 });
  const after: number | null | undefined = range.next_offset;
  const begun = await client.beginUpload({ size_bytes: 3 });
  await client.uploadChunk({ upload_id: begun.upload_id, offset: 0, content: new Uint8Array([1, 2, 3]) });
  const put: CreateBlobResult = await client.put('data.bin', { kind: 'application/zip', uploadId: begun.upload_id, onProgress: (done, total) => console.log(done / total) });
  await client.get(put.blob_id, 'copy.bin', { timeoutMs: 10_000 });
  const whole: Buffer = await client.readBlobBytes(put.blob_id);
  for await (const piece of client.iterBlob(put.blob_id, { offset: PIECE_BYTES })) console.log(piece.length);
  await client.runCode({ code: '' }, { onEvent: (e) => console.log(e.seq) });
  console.log(after, whole.length);
  try {
    await client.upload(new Uint8Array(0));
  } catch (err) {
    if (err instanceof TransferError) console.log(err.stringCode);
  }

  client.on('close', (reason) => {
    if (reason instanceof CloseReasonError) console.log(reason.stringCode, reason.retry?.suggestedDelayMs, reason.remote);
  });
  client.on('reconnecting', ({ attempt, delayMs }) => console.log(attempt, delayMs));
  client.on('serverError', (err) => console.log(err));
  try {
    await client.describeSkill({ name: 'nope' });
  } catch (err) {
    if (err instanceof RpcError) console.log(err.code, err.stringCode, err.details, err.retry?.maxAttempts);
  }
  const bodies: Buffer[] = new FrameParser({ maxMessageSize: 1024 }).push(encodeFrame({ a: 1 }, 1024));
  console.log(bodies.length);
  const c2 = new Client({ pipeline: true });
  const init: Promise<InitializeResult> = c2.connect();
  await init;
  await c2.close();
  await client.close();
}

// @ts-expect-error describe_skill needs a name
void new Client().describeSkill({});
// @ts-expect-error uploads take bytes, not text
void new Client().upload('text');
// @ts-expect-error only the documented events exist
new Client().on('nonsense', () => {});

void main;
