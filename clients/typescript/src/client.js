// @ts-check
/**
 * The skillgate client: dials, initializes, serves the calls of an agent
 * runtime and, when asked to, reconnects after the server goes away.
 *
 * States: new → connecting → ready ⇄ reconnecting → closed. Calls made while
 * connecting or reconnecting wait until the session is ready (or, with
 * `pipeline`, are written right behind Initialize); calls in flight when a
 * connection drops fail, because the server may or may not have run them.
 * @module
 */
import { EventEmitter } from 'node:events';
import net from 'node:net';
import tls from 'node:tls';
import { Connection } from './connection.js';
import { DEFAULT_MAX_MESSAGE_SIZE, MAX_FRAME_BODY } from './framing.js';
import { CloseReasonError, ConnectError, ConnectionClosedError, RpcError, SkillgateError } from './errors.js';
import * as transfer from './transfer.js';
import { VERSION } from './version.js';
import { errorProblem } from './wire.js';

/** The application protocol version this client speaks. */
export const PROTOCOL_VERSION = '1.0';

const DEFAULTS = {
  host: '127.0.0.1',
  port: 7400,
  connectTimeoutMs: 10000,
  keepaliveIntervalMs: 30000,
  keepaliveTimeoutMs: 20000,
};
const RECONNECT_DEFAULTS = { maxAttempts: 5, initialDelayMs: 250, maxDelayMs: 10000 };

/** @typedef {import('../index.js').ClientOptions} ClientOptions */
/** @typedef {import('../index.js').CallOptions} CallOptions */
/** @typedef {import('../index.js').InitializeResult} InitializeResult */

export class Client extends EventEmitter {
  /** @param {ClientOptions} [options] */
  constructor(options = {}) {
    super();
    checkOptions(options);
    this.options = options;
    /** run_event listeners: a streamed call's by request id, a watch's by run id. */
    this.byRequest = new Map();
    this.byRun = new Map();
    this.reconnectPolicy = reconnectPolicy(options.reconnect);
    /** @type {'new' | 'connecting' | 'ready' | 'reconnecting' | 'closed'} */
    this.state = 'new';
    /** @type {Connection | null} */
    this.conn = null;
    /** @type {InitializeResult | undefined} the current session's Initialize result */
    this.session = undefined;
    /** @type {{resolve: () => void, reject: (err: Error) => void}[]} */
    this.waiters = [];
    /** @type {Error | undefined} why the client closed */
    this.closeError = undefined;
    /** @type {(() => void) | undefined} ends a reconnect delay early */
    this.wakeReconnect = undefined;
  }

  /**
   * Connects and initializes. Resolves with the Initialize result.
   * @returns {Promise<InitializeResult>}
   */
  async connect() {
    if (this.state !== 'new') {
      throw new SkillgateError('ALREADY_CONNECTED', `connect: the client is ${this.state}`);
    }
    this.state = 'connecting';
    try {
      const result = await this.open();
      this.becomeReady();
      return result;
    } catch (err) {
      this.shutDown(/** @type {Error} */ (err));
      throw err;
    }
  }

  /**
   * Calls any method with an object of parameters.
   * @param {string} method
   * @param {Record<string, any>} [params]
   * @param {CallOptions} [callOptions]
   * @returns {Promise<any>}
   */
  async call(method, params = {}, callOptions = {}) {
    if (typeof method !== 'string' || method === '') throw new TypeError('call: method must be a non-empty string');
    if (typeof params !== 'object' || params === null || Array.isArray(params)) {
      throw new TypeError(`call ${method}: params must be a plain object (the transport allows no other kind)`);
    }
    const pipelined = this.options.pipeline && this.state === 'connecting' && this.conn !== null;
    if (this.state !== 'ready' && !pipelined) await this.whenReady();
    if (!this.conn) throw this.closeError ?? new ConnectionClosedError('connection closed');
    const { onEvent, ...rest } = callOptions;
    if (onEvent === undefined) return this.conn.request(method, params, rest);
    if (typeof onEvent !== 'function') throw new TypeError(`call ${method}: onEvent must be a function`);
    params = streamedParams(method, params);
    // A watch names its run; a streamed call's events carry its request id.
    const runId = method === 'watch_run' ? params.run_id : undefined;
    let requestId;
    if (runId !== undefined) this.byRun.set(runId, onEvent);
    try {
      return await this.conn.request(method, params, {
        ...rest,
        onId: (id) => { requestId = id; this.byRequest.set(id, onEvent); },
      });
    } finally {
      if (requestId !== undefined) this.byRequest.delete(requestId);
      if (runId !== undefined && this.byRun.get(runId) === onEvent) this.byRun.delete(runId);
    }
  }

  /**
   * Closes the client: the connection ends, calls still in flight or waiting
   * fail with CONNECTION_CLOSED, and no reconnect follows. Idempotent.
   * @returns {Promise<void>}
   */
  async close() {
    if (this.state === 'closed') {
      await this.conn?.closed;
      return;
    }
    const conn = this.conn;
    this.shutDown(undefined);
    await conn?.close();
  }

  // ---- the eight Skills Protocol methods ----

  /** @param {import('../index.js').ListSkillsParams} [params] @param {CallOptions} [o] */
  listSkills(params = {}, o) { return this.call('list_skills', params, o); }

  /** @param {import('../index.js').DescribeSkillParams} params @param {CallOptions} [o] */
  describeSkill(params, o) { return this.call('describe_skill', params, o); }

  /** @param {import('../index.js').ReadSkillFileParams} params @param {CallOptions} [o] */
  readSkillFile(params, o) { return this.call('read_skill_file', params, o); }

  /** @param {import('../index.js').ExecuteSkillParams} params @param {CallOptions} [o] */
  executeSkill(params, o) { return this.call('execute_skill', params, o); }

  /** @param {import('../index.js').RunCodeParams} params @param {CallOptions} [o] */
  runCode(params, o) { return this.call('run_code', { language: 'python', ...params }, o); }

  // ---- live runs (pass onEvent in the call options to stream) ----

  /** @param {import('../index.js').GetRunParams} params @param {CallOptions} [o] */
  getRun(params, o) { return this.call('get_run', params, o); }

  /** @param {import('../index.js').WatchRunParams} params @param {CallOptions} o */
  watchRun(params, o) {
    if (typeof o?.onEvent !== 'function') throw new TypeError('watchRun: options.onEvent must be a function');
    return this.call('watch_run', params, o);
  }

  /** @param {{run_id: string}} params @param {CallOptions} [o] */
  cancelRun(params, o) { return this.call('cancel_run', params, o); }

  /** @param {import('../index.js').ListRunsParams} [params] @param {CallOptions} [o] */
  listRuns(params = {}, o) { return this.call('list_runs', params, o); }

  /**
   * Binary content (a Uint8Array) is sent base64-encoded.
   * @param {import('../index.js').CreateBlobParams} params @param {CallOptions} [o]
   */
  createBlob(params, o) {
    if (params?.content instanceof Uint8Array) {
      const content = Buffer.from(params.content.buffer, params.content.byteOffset, params.content.byteLength);
      params = { kind: 'application/octet-stream', ...params, content: content.toString('base64'), encoding: 'base64' };
    }
    return this.call('create_blob', params, o);
  }

  /**
   * An offset without a mode reads a range.
   * @param {import('../index.js').ReadBlobParams} params @param {CallOptions} [o]
   */
  readBlob(params, o) {
    if (params?.offset !== undefined && params.mode === undefined) params = { ...params, mode: 'range' };
    return this.call('read_blob', params, o);
  }

  // ---- blobs of any size (src/transfer.js) ----

  /** @param {import('../index.js').BeginUploadParams} params @param {CallOptions} [o] */
  beginUpload(params, o) { return this.call('begin_upload', { kind: 'application/octet-stream', ...params }, o); }

  /**
   * Binary content (a Uint8Array) is sent base64-encoded.
   * @param {import('../index.js').UploadChunkParams} params @param {CallOptions} [o]
   */
  uploadChunk(params, o) {
    if (params?.content instanceof Uint8Array) {
      const content = Buffer.from(params.content.buffer, params.content.byteOffset, params.content.byteLength);
      params = { ...params, content: content.toString('base64'), encoding: 'base64' };
    }
    return this.call('upload_chunk', params, o);
  }

  /** @param {{upload_id: string, sha256: string}} params @param {CallOptions} [o] */
  finishUpload(params, o) { return this.call('finish_upload', params, o); }

  /** @param {Uint8Array} data @param {import('../index.js').UploadOptions} [o] */
  upload(data, o) { return transfer.upload(this, data, o); }

  /** @param {string} path @param {import('../index.js').UploadOptions} [o] */
  put(path, o) { return transfer.put(this, path, o); }

  /** @param {string} blobId @param {string} path @param {import('../index.js').TransferOptions} [o] */
  get(blobId, path, o) { return transfer.get(this, blobId, path, o); }

  /** @param {string} blobId @param {import('../index.js').TransferOptions} [o] */
  readBlobBytes(blobId, o) { return transfer.readBlobBytes(this, blobId, o); }

  /** @param {string} blobId @param {import('../index.js').TransferOptions & {offset?: number}} [o] */
  iterBlob(blobId, o) { return transfer.iterBlob(this, blobId, o); }

  /** @param {CallOptions} [o] */
  loadSkillsProtocolGuide(o) { return this.call('load_skills_protocol_guide', {}, o); }

  // ---- connection lifecycle ----

  /**
   * Dials and initializes one connection. Initialize is queued before the
   * socket is even connected, so that pipelined calls follow it.
   * @returns {Promise<InitializeResult>}
   */
  async open() {
    const o = this.options;
    const socket = this.dial();
    const conn = new Connection(socket, {
      maxMessageSize: o.maxMessageSize ?? DEFAULT_MAX_MESSAGE_SIZE,
      keepaliveIntervalMs: o.keepalive === false ? 0 : o.keepalive?.intervalMs ?? DEFAULTS.keepaliveIntervalMs,
      keepaliveTimeoutMs: o.keepalive === false ? 0 : o.keepalive?.timeoutMs ?? DEFAULTS.keepaliveTimeoutMs,
      onNotification: (method, params) => this.onNotification(method, params),
      onServerKeepalive: () => this.emit('keepalive'),
      onClose: (reason) => this.onConnectionClosed(conn, reason),
    });
    this.conn = conn;
    const init = conn.request('Initialize', this.initializeParams());
    init.catch(() => {}); // observed below; a connect failure must not leave it unhandled
    try {
      await this.waitConnected(socket);
    } catch (err) {
      conn.destroy(/** @type {Error} */ (err));
      throw err;
    }
    conn.start();
    let result;
    try {
      result = /** @type {InitializeResult} */ (await init);
    } catch (err) {
      conn.close();
      throw err;
    }
    if (conn.finished) throw conn.closedError(); // closed right after answering
    this.adoptLimits(conn, result);
    this.session = result;
    return result;
  }

  /**
   * Applies the server's max_message_size: outgoing always (it would abort
   * on a larger frame); incoming only when maxMessageSize was left unset,
   * since an explicit option is the caller's own bound.
   * @param {Connection} conn
   * @param {InitializeResult} result
   */
  adoptLimits(conn, result) {
    const advertised = result.max_message_size;
    if (!Number.isInteger(advertised) || advertised <= 0 || advertised > MAX_FRAME_BODY) return;
    const own = this.options.maxMessageSize;
    conn.setOutgoingLimit(Math.min(advertised, own ?? Infinity));
    if (own === undefined) conn.setIncomingLimit(advertised);
  }

  /** @returns {import('node:net').Socket} a socket, still connecting */
  dial() {
    const o = this.options;
    const host = o.host ?? DEFAULTS.host;
    const port = o.port ?? DEFAULTS.port;
    // Frames are coalesced per turn of the event loop already; Nagle would
    // only hold the next batch back for an ACK.
    if (!o.tls) return net.connect({ host, port }).setNoDelay(true);
    const t = o.tls === true ? {} : o.tls;
    return tls.connect({
      host,
      port,
      ca: t.ca,
      cert: t.cert,
      key: t.key,
      servername: t.servername ?? (net.isIP(host) ? undefined : host),
      rejectUnauthorized: t.rejectUnauthorized ?? true,
      minVersion: 'TLSv1.2',
    }).setNoDelay(true);
  }

  /**
   * Resolves when the socket (and its TLS handshake) is up.
   * @param {import('node:net').Socket} socket
   */
  waitConnected(socket) {
    const o = this.options;
    const where = `${o.host ?? DEFAULTS.host}:${o.port ?? DEFAULTS.port}`;
    const ready = o.tls ? 'secureConnect' : 'connect';
    const timeoutMs = o.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`no connection within ${timeoutMs} ms`)), timeoutMs);
      /** @param {Error} [err] */
      const done = (err) => {
        clearTimeout(timer);
        socket.off(ready, onReady).off('error', done).off('close', onClose);
        if (err) reject(new ConnectError(`connect ${where}: ${err.message}`, { cause: err }));
        else resolve(undefined);
      };
      const onReady = () => done();
      const onClose = () => done(new Error('closed while connecting'));
      socket.once(ready, onReady).once('error', done).once('close', onClose);
    });
  }

  /** @returns {Record<string, any>} the params of Initialize */
  initializeParams() {
    const o = this.options;
    /** @type {Record<string, any>} */
    const params = {
      protocol_version: o.protocolVersion ?? PROTOCOL_VERSION,
      client: { name: o.clientInfo?.name ?? 'skillgate-typescript', version: o.clientInfo?.version ?? VERSION },
    };
    if (o.token) params.token = o.token;
    return params;
  }

  /**
   * @param {string} method
   * @param {any} params
   */
  onNotification(method, params) {
    if (method === 'run_event') {
      const listener = this.byRun.get(params?.run_id) ?? this.byRequest.get(params?.request_id);
      if (listener !== undefined) {
        listener(params);
        return;
      }
    }
    if (method === '_Info') {
      this.emit('info', params);
    } else if (method === '_Error') {
      const error = params?.error;
      const valid = errorProblem(error) === undefined;
      this.emit('serverError', valid ? new RpcError(error, params.method) : params, params);
    } else {
      this.emit('notification', method, params);
    }
  }

  /**
   * @param {Connection} conn
   * @param {Error} reason
   */
  onConnectionClosed(conn, reason) {
    if (conn !== this.conn) return;
    this.conn = null;
    if (this.state !== 'ready') return; // connect() and the reconnect loop see the failure themselves
    this.emit('disconnect', reason);
    if (this.reconnectPolicy) {
      this.state = 'reconnecting';
      this.reconnect(reason);
    } else {
      this.shutDown(reason);
    }
  }

  /**
   * Reconnects with the server's retry hint when it gave one (its delay,
   * and no more attempts than it allows), else with exponential backoff.
   * @param {Error} reason
   */
  async reconnect(reason) {
    const policy = /** @type {Required<import('../index.js').ReconnectOptions>} */ (this.reconnectPolicy);
    const hint = reason instanceof RpcError ? reason.retry : undefined;
    const attempts = Math.min(policy.maxAttempts, hint?.maxAttempts ?? Infinity);
    let last = reason;
    let delayHint = hint?.suggestedDelayMs;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const delayMs = Math.min(spread(delayHint ?? policy.initialDelayMs * 2 ** (attempt - 1)), policy.maxDelayMs);
      this.emit('reconnecting', { attempt, delayMs, error: last });
      await this.sleep(delayMs);
      if (this.state !== 'reconnecting') return;
      try {
        const result = await this.open();
        if (this.state !== 'reconnecting') return;
        this.becomeReady();
        this.emit('reconnect', result);
        return;
      } catch (err) {
        if (this.state !== 'reconnecting') return;
        last = /** @type {Error} */ (err);
        if (refusedForGood(last)) break;
        delayHint = last instanceof RpcError ? last.retry?.suggestedDelayMs : undefined;
      }
    }
    this.shutDown(last);
  }

  /** @param {number} ms */
  sleep(ms) {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wakeReconnect = () => {
        clearTimeout(timer);
        resolve(undefined);
      };
    });
  }

  becomeReady() {
    this.state = 'ready';
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.resolve();
  }

  /**
   * Ends the client for good; reason undefined means close() was called.
   * @param {Error | undefined} reason
   */
  shutDown(reason) {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.closeError = reason;
    this.wakeReconnect?.();
    const err = reason ?? new ConnectionClosedError('the client is closed');
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(err);
    this.emit('close', reason);
  }

  /** @returns {Promise<void>} */
  whenReady() {
    if (this.state === 'ready') return Promise.resolve();
    if (this.state === 'new') {
      return Promise.reject(new SkillgateError('NOT_CONNECTED', 'call connect() first'));
    }
    if (this.state === 'closed') {
      return Promise.reject(this.closeError ?? new ConnectionClosedError('the client is closed'));
    }
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }
}

/**
 * Connects a new client and initializes its session.
 * @param {ClientOptions} [options]
 * @returns {Promise<Client>}
 */
export async function connect(options) {
  const client = new Client(options);
  await client.connect();
  return client;
}

/**
 * A run started with an event listener is streamed, as in the Python
 * client: execute_skill and run_code get `stream: true` unless the caller
 * set `stream` or asked for a background run, which has no events to send
 * on this call (follow it with watch_run).
 * @param {string} method
 * @param {Record<string, any>} params
 */
function streamedParams(method, params) {
  if (method !== 'execute_skill' && method !== 'run_code') return params;
  if (params.async === true) {
    throw new TypeError(`call ${method}: onEvent (a streamed run) and async (a background run) exclude each other; follow a background run with watchRun`);
  }
  return params.stream === undefined ? { ...params, stream: true } : params;
}

/**
 * Adds up to 20% to a delay, so that the clients a drain disconnected
 * together do not all come back in the same millisecond.
 * @param {number} ms
 */
function spread(ms) {
  return ms + Math.floor(Math.random() * ms * 0.2);
}

/**
 * Whether a failed attempt should end the reconnecting: an error answer
 * without a retry hint (AUTH_REQUIRED, VERSION_INCOMPATIBLE) will not
 * change; dropped connections and close reasons may.
 * @param {Error} err
 */
function refusedForGood(err) {
  return err instanceof RpcError && !(err instanceof CloseReasonError) && !err.retryable;
}

/**
 * Refuses options that would fail later in a confusing way (a port of
 * "7400x", a keepalive that never times out).
 * @param {ClientOptions} o
 */
function checkOptions(o) {
  if (typeof o !== 'object' || o === null) throw new TypeError('Client: options must be an object');
  if (o.port !== undefined && !(Number.isInteger(o.port) && o.port > 0 && o.port < 65536)) {
    throw new RangeError(`Client: port must be an integer in [1, 65535], got ${o.port}`);
  }
  if (o.host !== undefined && (typeof o.host !== 'string' || o.host === '')) {
    throw new TypeError('Client: host must be a non-empty string');
  }
  if (o.maxMessageSize !== undefined && !(Number.isInteger(o.maxMessageSize) && o.maxMessageSize > 0 && o.maxMessageSize <= MAX_FRAME_BODY)) {
    throw new RangeError(`Client: maxMessageSize must be an integer in [1, ${MAX_FRAME_BODY}], got ${o.maxMessageSize}`);
  }
  /** @type {[string, unknown][]} */
  const durations = [['connectTimeoutMs', o.connectTimeoutMs]];
  if (o.keepalive) durations.push(['keepalive.intervalMs', o.keepalive.intervalMs], ['keepalive.timeoutMs', o.keepalive.timeoutMs]);
  for (const [name, v] of durations) {
    if (v !== undefined && !(typeof v === 'number' && Number.isFinite(v) && v > 0)) {
      throw new RangeError(`Client: ${name} must be a positive number of milliseconds, got ${v}`);
    }
  }
}

/**
 * @param {ClientOptions['reconnect']} r
 * @returns {Required<import('../index.js').ReconnectOptions> | undefined}
 */
function reconnectPolicy(r) {
  if (!r) return undefined;
  const p = { ...RECONNECT_DEFAULTS, ...(r === true ? {} : r) };
  for (const [k, v] of Object.entries(p)) {
    if (!Number.isFinite(v) || v < 0) throw new RangeError(`reconnect.${k} must be a non-negative number, got ${v}`);
  }
  return p;
}
