/// <reference types="node" />
/**
 * Type declarations of the skillgate client for Node.js. The implementation
 * is plain ECMAScript modules under src/; these declarations are written by
 * hand and checked by `npm run typecheck`.
 */
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';

/** The application protocol version this client speaks. */
export const PROTOCOL_VERSION: '1.0';
/** The package version, sent as the client version in Initialize. */
export const VERSION: string;

// ---------------------------------------------------------------- options

export interface TlsOptions {
  /** PEM CA bundle that verifies the server (default: Node's root store). */
  ca?: string | Buffer | Array<string | Buffer>;
  /** PEM client certificate chain, for mutual TLS. */
  cert?: string | Buffer;
  /** PEM private key of `cert`. */
  key?: string | Buffer;
  /** Server name to verify and send as SNI (default: the host, unless it is an IP address). */
  servername?: string;
  /** Verify the server's certificate (default true). */
  rejectUnauthorized?: boolean;
}

export interface KeepaliveOptions {
  /** Probe the server after this long without traffic from it (default 30000). */
  intervalMs?: number;
  /** Abort with KEEPALIVE when a probe is unanswered this long (default 20000). */
  timeoutMs?: number;
}

export interface ReconnectOptions {
  /** Attempts after a connection drops; a server retry hint may lower it (default 5). */
  maxAttempts?: number;
  /** Delay before the first attempt when the server gave no hint; doubles each time (default 250). Delays get up to 20% added at random. */
  initialDelayMs?: number;
  /** Upper bound of any delay, hinted or not (default 10000). */
  maxDelayMs?: number;
}

export interface ClientOptions {
  /** Default "127.0.0.1". */
  host?: string;
  /** Default 7400. */
  port?: number;
  /** Connect over TLS; `true` uses Node's root store. */
  tls?: boolean | TlsOptions;
  /** Bearer token sent in Initialize. */
  token?: string;
  /** Sent in Initialize (default name "skillgate-typescript" and this package's version). */
  clientInfo?: { name: string; version: string };
  /** Default "1.0". */
  protocolVersion?: string;
  /**
   * Largest message body in bytes (UTF-8), both ways. Outgoing, the server's
   * advertised max_message_size lowers it; a larger incoming frame aborts the
   * connection. Unset: 1 MiB (the gateway's default) until Initialize, then
   * the server's max_message_size both ways.
   */
  maxMessageSize?: number;
  /** Client keepalive; `false` turns it off (the server's probes are always answered). */
  keepalive?: KeepaliveOptions | false;
  /** Give up connecting (TCP and TLS) after this long (default 10000). */
  connectTimeoutMs?: number;
  /** Reconnect when an initialized connection drops; off unless set. */
  reconnect?: boolean | ReconnectOptions;
  /**
   * Write calls made while Initialize is in flight right behind it, in the
   * same write, instead of holding them until it succeeds. Saves a round
   * trip; needs a gateway that completes Initialize before later messages.
   */
  pipeline?: boolean;
}

export interface CallOptions {
  /** Stop waiting after this long (CALL_TIMEOUT). The server may still run the call. */
  timeoutMs?: number;
  /** Stop waiting when aborted; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Receives the run_event notifications of the call's run, in order and
   * before the result: execute_skill and run_code (which it makes streamed
   * runs: `stream: true` unless `stream` is given; with `async: true` the
   * call is refused) and watch_run. Called on the connection's reader: it
   * must not block.
   */
  onEvent?: (event: RunEvent) => void;
}

// ---------------------------------------------------------------- wire shapes

/** A server's retry hint (data.retry), in camelCase. */
export interface RetryHint {
  suggestedDelayMs: number;
  maxAttempts: number;
}

/** A JSON-RPC error object as it travels. */
export interface WireError {
  code: number;
  message: string;
  data?: {
    string_code?: string;
    details?: string;
    retry?: { suggested_delay_ms: number; max_attempts: number };
    [key: string]: unknown;
  };
}

export interface InitializeResult {
  protocol_version: string;
  server: { name: string; version: string };
  session_id: string;
  identity?: string;
  max_message_size: number;
  keepalive_interval_ms: number;
  keepalive_timeout_ms: number;
  methods?: string[];
  [key: string]: unknown;
}

export interface ListSkillsParams {
  namespace?: string;
  cursor?: string;
  detail?: 'names' | 'summary';
  limit?: number;
}

export interface SkillEntry {
  name: string;
  version: string;
  description?: string;
  namespace?: string;
  kind?: 'action' | 'instruction' | string;
}

export interface ListSkillsResult {
  skills: SkillEntry[];
  next_cursor: string | null;
}

export interface DescribeSkillParams {
  name: string;
  version?: string;
  detail?: 'manifest' | 'summary' | 'full';
}

export interface SkillManifest {
  name: string;
  version: string;
  description: string;
  kind: 'action' | 'instruction' | string;
  runtime?: { language: string; entrypoint: string; export: string; timeout_ms?: number };
  permissions: { secrets: string[] | null };
}

export interface FileInfo {
  path: string;
  size_bytes: number;
  sha256: string;
}

export interface SkillDescription {
  name: string;
  version: string;
  manifest: SkillManifest;
  namespace?: string;
  kind?: string;
  description?: string;
  title?: string;
  short_description?: string;
  tags?: string[];
  versions?: string[];
  source?: string;
  front_matter?: Record<string, unknown>;
  skill_md?: string;
  files?: FileInfo[];
  digest?: string;
}

export interface DescribeSkillResult {
  skill: SkillDescription;
}

export interface ReadSkillFileParams {
  name: string;
  version?: string;
  path: string;
  offset?: number;
  max_bytes?: number;
}

export interface SkillFile {
  name: string;
  version: string;
  path: string;
  size_bytes: number;
  sha256: string;
  offset: number;
  encoding: 'utf-8' | 'base64';
  content: string;
  truncated: boolean;
  next_offset?: number;
}

export interface ExecuteSkillParams {
  name: string;
  version?: string;
  args?: Record<string, unknown>;
  input_blobs?: string[];
  timeout_ms?: number;
  /** Send the run's events to CallOptions.onEvent, then the result. */
  stream?: boolean;
  /** Answer {run_id, status: "running"} at once; the run goes on after a disconnect. */
  async?: boolean;
}

export interface RunCodeParams {
  /** Default "python"; "bash" runs the code as a bash script. */
  language?: 'python' | 'bash';
  code: string;
  /** The function to call (default "main"). */
  entrypoint?: string;
  args?: Record<string, unknown>;
  /** Skills importable as `skills.<name>`, each "name" or "name@version". */
  mount_skills?: string[];
  input_blobs?: string[];
  timeout_ms?: number;
  limits?: { timeout_ms?: number };
  stream?: boolean;
  async?: boolean;
}

/** A run_event's params; `type` says which of the optional members it has. */
export interface RunEvent {
  run_id: string;
  /** The id of the call that started the run (absent for an async run). */
  request_id?: string;
  /** 1, 2, 3… per run, no holes; an event with from_seq (a gap, or log
   * events merged for a client that fell behind) stands for from_seq..seq. */
  seq: number;
  type: 'started' | 'log' | 'progress' | 'blob' | 'gap' | 'finished' | string;
  what?: string;
  queued_ms?: number;
  stream?: 'stdout' | 'stderr' | 'log' | string;
  text?: string;
  progress?: number;
  total?: number | null;
  message?: string | null;
  blob_id?: string;
  kind?: string;
  size_bytes?: number;
  from_seq?: number;
  to_seq?: number;
  status?: string;
}

export interface GetRunParams {
  run_id: string;
  /** Wait up to this long (0-60000 ms) for the run to finish. */
  wait_ms?: number;
}

export interface WatchRunParams {
  run_id: string;
  /** Replay the retained events after this seq (default 0: all). */
  after_seq?: number;
}

export interface ListRunsParams {
  status?: 'running' | 'finished';
  limit?: number;
  cursor?: string;
}

export interface RunRef {
  run_id: string;
  status: string;
}

export interface ListRunsResult {
  runs: { run_id: string; status: string; what: string; started_at: string; duration_ms: number }[];
  next_cursor: string | null;
}

/** The run object of execute_skill and run_code; a failed run is a result, not an error. */
export interface RunResult {
  status: 'completed' | 'failed' | string;
  run_id: string;
  summary: string;
  output?: unknown;
  output_blobs: string[];
  logs_preview: string;
  /** The full logs as a text/plain blob, when longer than logs_preview. */
  logs_blob?: string;
  error?: { type: string; message: string };
  retry?: { suggested_delay_ms: number; max_attempts: number };
  duration_ms: number;
}

export interface CreateBlobParams {
  /** Text, or bytes (sent base64-encoded, kind application/octet-stream unless given). */
  content: string | Uint8Array;
  /** MIME type (default text/plain). */
  kind?: string;
  encoding?: 'utf-8' | 'base64';
}

export interface CreateBlobResult {
  blob_id: string;
  size_bytes: number;
  kind: string;
  sha256: string;
}

export interface ReadBlobParams {
  blob_id: string;
  /** "range" (implied by offset) reads max_bytes from offset; a blob of any size is read by following next_offset. */
  mode?: 'sample_head' | 'sample_tail' | 'full' | 'range';
  /** Where a range starts (default 0). */
  offset?: number;
  max_bytes?: number;
}

export interface ReadBlobResult {
  blob_id: string;
  kind: string;
  size_bytes: number;
  encoding: 'utf-8' | 'base64';
  content: string;
  truncated: boolean;
  /** Mode "range": the whole blob's SHA-256. */
  sha256?: string;
  /** Mode "range": where this piece starts. */
  offset?: number;
  /** Mode "range": where the next piece starts; null after the last one. */
  next_offset?: number | null;
}

export interface BeginUploadParams {
  /** The blob's size in bytes. */
  size_bytes: number;
  /** MIME type (default application/octet-stream). */
  kind?: string;
}

export interface BeginUploadResult {
  upload_id: string;
  /** The most one chunk may hold. */
  max_chunk_bytes: number;
}

export interface UploadChunkParams {
  upload_id: string;
  /** Where the received bytes end (or a resend of bytes already received). */
  offset: number;
  /** Bytes (sent base64-encoded), or text with encoding. */
  content: string | Uint8Array;
  encoding?: 'utf-8' | 'base64';
}

export interface UploadChunkResult {
  received_bytes: number;
}

/** Options of a transfer; timeoutMs and signal apply to each call, not the whole transfer. */
export interface TransferOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Called after each piece with the bytes done and the bytes in all. */
  onProgress?: (done: number, total: number) => void;
}

export interface UploadOptions extends TransferOptions {
  /** MIME type of a new upload (default application/octet-stream). */
  kind?: string;
  /**
   * Resume this upload (begun with beginUpload): chunks the gateway holds
   * are accepted again unchanged and the first answer says how far it got.
   */
  uploadId?: string;
  /**
   * The bytes of one chunk: PIECE_BYTES, or the gateway's max_chunk_bytes
   * when smaller. A resumed upload must cut the data as its first attempt did.
   */
  chunkBytes?: number;
}

/** The bytes of one chunk or range read of the transfer helpers (512 KiB). */
export const PIECE_BYTES: number;

export interface GuideResult {
  content: string;
}

// ---------------------------------------------------------------- client

export interface ReconnectingEvent {
  attempt: number;
  delayMs: number;
  error: Error;
}

export interface ClientEvents {
  /** A `_Info` notification's params (informative only). */
  info: [params: unknown];
  /** A `_Error` notification: an RpcError when well-formed, else the raw params. */
  serverError: [error: RpcError | unknown, params: unknown];
  /** Any other notification from the server. */
  notification: [method: string, params: unknown];
  /** The client answered a server `_Keepalive`. */
  keepalive: [];
  /** An initialized connection dropped (reconnecting follows when enabled). */
  disconnect: [reason: Error];
  reconnecting: [event: ReconnectingEvent];
  reconnect: [result: InitializeResult];
  /** The client is closed for good; reason is undefined after close(). */
  close: [reason: Error | undefined];
}

export class Client extends EventEmitter {
  constructor(options?: ClientOptions);
  readonly options: ClientOptions;
  readonly state: 'new' | 'connecting' | 'ready' | 'reconnecting' | 'closed';
  /** The current session's Initialize result. */
  readonly session: InitializeResult | undefined;

  /** Connects and initializes; rejects with ConnectError, RpcError or CloseReasonError. */
  connect(): Promise<InitializeResult>;
  /** Closes for good; calls in flight fail with CONNECTION_CLOSED. Idempotent. */
  close(): Promise<void>;

  /** Calls any method with an object of params (not an array); rejects with RpcError on an error response. */
  call<T = Record<string, any>>(method: string, params?: object, options?: CallOptions): Promise<T>;

  listSkills(params?: ListSkillsParams, options?: CallOptions): Promise<ListSkillsResult>;
  describeSkill(params: DescribeSkillParams, options?: CallOptions): Promise<DescribeSkillResult>;
  readSkillFile(params: ReadSkillFileParams, options?: CallOptions): Promise<SkillFile>;
  executeSkill(params: ExecuteSkillParams, options?: CallOptions): Promise<RunResult>;
  runCode(params: RunCodeParams, options?: CallOptions): Promise<RunResult>;
  getRun(params: GetRunParams, options?: CallOptions): Promise<RunResult>;
  watchRun(params: WatchRunParams, options: CallOptions & { onEvent: (event: RunEvent) => void }): Promise<RunResult>;
  cancelRun(params: { run_id: string }, options?: CallOptions): Promise<RunRef>;
  listRuns(params?: ListRunsParams, options?: CallOptions): Promise<ListRunsResult>;
  createBlob(params: CreateBlobParams, options?: CallOptions): Promise<CreateBlobResult>;
  readBlob(params: ReadBlobParams, options?: CallOptions): Promise<ReadBlobResult>;
  beginUpload(params: BeginUploadParams, options?: CallOptions): Promise<BeginUploadResult>;
  uploadChunk(params: UploadChunkParams, options?: CallOptions): Promise<UploadChunkResult>;
  finishUpload(params: { upload_id: string; sha256: string }, options?: CallOptions): Promise<CreateBlobResult>;
  /** Uploads bytes in chunks, checked by SHA-256 when finished; carries on after a reconnect. */
  upload(data: Uint8Array, options?: UploadOptions): Promise<CreateBlobResult>;
  /** Uploads a file in chunks (see upload). */
  put(path: string, options?: UploadOptions): Promise<CreateBlobResult>;
  /**
   * Downloads a blob into path via path.part, renamed once its bytes match
   * the blob's SHA-256; a .part left by a cut download is continued, one
   * that does not match is removed (TransferError).
   */
  get(blobId: string, path: string, options?: TransferOptions): Promise<CreateBlobResult>;
  /** The whole blob in memory, checked against its SHA-256. */
  readBlobBytes(blobId: string, options?: TransferOptions): Promise<Buffer>;
  /** The blob's bytes from offset to its end, piece by piece, unchecked. */
  iterBlob(blobId: string, options?: TransferOptions & { offset?: number }): AsyncGenerator<Buffer>;
  loadSkillsProtocolGuide(options?: CallOptions): Promise<GuideResult>;

  on<E extends keyof ClientEvents>(event: E, listener: (...args: ClientEvents[E]) => void): this;
  once<E extends keyof ClientEvents>(event: E, listener: (...args: ClientEvents[E]) => void): this;
  off<E extends keyof ClientEvents>(event: E, listener: (...args: ClientEvents[E]) => void): this;
  emit<E extends keyof ClientEvents>(event: E, ...args: ClientEvents[E]): boolean;
}

/** Creates a client, connects and initializes it. */
export function connect(options?: ClientOptions): Promise<Client>;

// ---------------------------------------------------------------- errors

/** Base class; branch on `stringCode`. */
export class SkillgateError extends Error {
  constructor(stringCode: string, message: string, options?: ErrorOptions);
  stringCode: string;
}

/** An error response (or the error of a _CloseReason). */
export class RpcError extends SkillgateError {
  constructor(error: WireError, method?: string);
  /** JSON-RPC numeric code (1 for application errors). */
  readonly code: number;
  /** The message as the server wrote it. */
  readonly serverMessage: string;
  readonly details: string | undefined;
  readonly retry: RetryHint | undefined;
  /** error.data, application fields included. */
  readonly data: Record<string, unknown>;
  readonly method: string | undefined;
  /** Whether the server gave a retry hint. */
  readonly retryable: boolean;
}

/** Why a connection closed: the server's _CloseReason (remote) or this client's abort. */
export class CloseReasonError extends RpcError {
  constructor(error: WireError, remote: boolean);
  readonly remote: boolean;
}

/** The connection ended without a close reason (stringCode CONNECTION_CLOSED). */
export class ConnectionClosedError extends SkillgateError {
  constructor(message: string, options?: ErrorOptions);
}

/** TCP connect or TLS handshake failed (stringCode CONNECT_FAILED). */
export class ConnectError extends SkillgateError {
  constructor(message: string, options?: ErrorOptions);
}

/** Framing broken (stringCode JSONRPC_PARSE_ERROR). */
export class FrameError extends SkillgateError {
  constructor(kind: string, message: string);
  readonly kind: 'bad_length' | 'no_colon' | 'no_newline' | 'too_large' | string;
}

/** A message over the size limit; outgoing ones have stringCode MESSAGE_TOO_LARGE and the connection lives. */
export class FrameTooLargeError extends FrameError {
  constructor(size: number, limit: number, direction: 'incoming' | 'outgoing');
  readonly size: number;
  readonly limit: number;
  readonly direction: 'incoming' | 'outgoing';
}

/** A call outlived its timeoutMs (stringCode CALL_TIMEOUT). */
/** A blob transfer's bytes do not match the blob's SHA-256, or an answer contradicts the transfer (TRANSFER_FAILED). */
export class TransferError extends SkillgateError {
  constructor(message: string);
}

export class CallTimeoutError extends SkillgateError {
  constructor(method: string, timeoutMs: number);
  readonly method: string;
  readonly timeoutMs: number;
}

/** The string code the transport spec maps a numeric code to (UNKNOWN for others). */
export function stringCodeFor(code: number): string;

// ---------------------------------------------------------------- framing and the raw connection

export const HEADER_LENGTH: 9;
export const MAX_FRAME_BODY: number;
export const DEFAULT_MAX_MESSAGE_SIZE: number;

/** Frames a message; throws FrameTooLargeError when its UTF-8 body exceeds maxBody bytes. */
export function encodeFrame(message: unknown, maxBody: number): Buffer;
/** Parses a 9-byte header; throws FrameError. */
export function parseHeader(header: Buffer): number;

/** A streaming frame parser for chunks that split or merge frames. */
export class FrameParser {
  constructor(options?: { maxMessageSize?: number });
  maxMessageSize: number;
  /** Returns the bodies the chunk completed; throws FrameError on bad framing. */
  push(chunk: Buffer): Buffer[];
  /** Whether a frame has begun but is not complete. */
  readonly partial: boolean;
}

export interface ConnectionOptions {
  maxMessageSize?: number;
  idPrefix?: string;
  keepaliveIntervalMs?: number;
  keepaliveTimeoutMs?: number;
  onNotification?: (method: string, params: unknown) => void;
  onServerKeepalive?: () => void;
  onClose?: (reason: Error) => void;
}

/** One framed connection over a socket, without Initialize; the Client builds on it. */
export class Connection {
  constructor(socket: Socket, options?: ConnectionOptions);
  /** Settles with the reason once the connection is over. */
  readonly closed: Promise<Error>;
  readonly finished: boolean;
  /** Starts writing queued frames and probing; call once the socket is connected. */
  start(): void;
  setOutgoingLimit(limit: number): void;
  setIncomingLimit(limit: number): void;
  request(method: string, params: object, options?: CallOptions): Promise<Record<string, any>>;
  notify(method: string, params: object): void;
  close(): Promise<Error>;
  abort(error: WireError): void;
  destroy(err: Error): void;
}
