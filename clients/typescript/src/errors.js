// @ts-check
/**
 * Every error the client raises. Errors the server sends keep its numeric
 * code, string code, details and retry hint; errors the client detects
 * itself carry string codes of their own (CONNECTION_CLOSED, MESSAGE_TOO_LARGE,
 * ...) so that callers can switch on `stringCode` alone.
 * @module
 */

/** String codes the transport spec maps numeric codes to. */
const STRING_CODES = new Map([
  [-32700, 'JSONRPC_PARSE_ERROR'],
  [-32600, 'JSONRPC_INVALID_REQUEST'],
  [-32601, 'JSONRPC_METHOD_NOT_FOUND'],
  [-32602, 'JSONRPC_INVALID_PARAMS'],
  [-32603, 'INTERNAL_ERROR'],
  [-32000, 'KEEPALIVE'],
]);

/**
 * The string code of a numeric code, as an error receiver must map it when
 * the sender gave none.
 * @param {number} code
 * @returns {string}
 */
export function stringCodeFor(code) {
  return STRING_CODES.get(code) ?? 'UNKNOWN';
}

/** The base class of every error of this package. */
export class SkillgateError extends Error {
  /**
   * @param {string} stringCode
   * @param {string} message
   * @param {ErrorOptions} [options]
   */
  constructor(stringCode, message, options) {
    super(message, options);
    this.name = new.target.name;
    /** What went wrong, machine-readable: the field to branch on. */
    this.stringCode = stringCode;
  }
}

/**
 * An error response to a call (or the error of a _CloseReason): code,
 * message, data.string_code, data.details and data.retry from the wire.
 */
export class RpcError extends SkillgateError {
  /**
   * @param {{code: number, message: string, data?: Record<string, any>}} error
   *   a validated JSON-RPC error object
   * @param {string} [method] the method whose call failed
   */
  constructor(error, method) {
    const data = error.data ?? {};
    const stringCode = typeof data.string_code === 'string' ? data.string_code : stringCodeFor(error.code);
    super(stringCode, method ? `${method}: ${error.message} (${stringCode})` : `${error.message} (${stringCode})`);
    /** The JSON-RPC numeric code (1 for application errors). */
    this.code = error.code;
    /** The message as the server wrote it. */
    this.serverMessage = error.message;
    /** @type {string | undefined} diagnostics: tracebacks, paths, hints */
    this.details = typeof data.details === 'string' ? data.details : undefined;
    /** @type {import('../index.js').RetryHint | undefined} */
    this.retry = parseRetry(data.retry);
    /** Everything in error.data, application fields included. */
    this.data = data;
    /** @type {string | undefined} */
    this.method = method;
  }

  /** Whether the server said a retry may help. */
  get retryable() {
    return this.retry !== undefined;
  }
}

/**
 * Why a connection was closed: the server's _CloseReason (remote) or the
 * reason this client aborted it (KEEPALIVE, JSONRPC_PARSE_ERROR, ...).
 */
export class CloseReasonError extends RpcError {
  /**
   * @param {{code: number, message: string, data?: Record<string, any>}} error
   * @param {boolean} remote whether the server sent it
   */
  constructor(error, remote) {
    super(error);
    this.message = `connection closed by the ${remote ? 'server' : 'client'}: ${this.message}`;
    /** True when the server sent the reason, false when this client aborted. */
    this.remote = remote;
  }
}

/** The connection ended without a close reason (EOF, reset, close()). */
export class ConnectionClosedError extends SkillgateError {
  /**
   * @param {string} message
   * @param {ErrorOptions} [options]
   */
  constructor(message, options) {
    super('CONNECTION_CLOSED', message, options);
  }
}

/** A frame broke the framing rules; the connection is aborted. */
export class FrameError extends SkillgateError {
  /**
   * @param {string} kind bad_length, no_colon, no_newline or too_large
   * @param {string} message
   */
  constructor(kind, message) {
    super('JSONRPC_PARSE_ERROR', message);
    this.kind = kind;
  }
}

/**
 * A message is larger than the receiver accepts. Outgoing, the call fails and
 * the connection lives; incoming, the connection is aborted.
 */
export class FrameTooLargeError extends FrameError {
  /**
   * @param {number} size the body's length in bytes
   * @param {number} limit
   * @param {'incoming' | 'outgoing'} direction
   */
  constructor(size, limit, direction) {
    super('too_large', `${direction} message of ${size} bytes exceeds the limit of ${limit} bytes`);
    if (direction === 'outgoing') this.stringCode = 'MESSAGE_TOO_LARGE';
    this.size = size;
    this.limit = limit;
    this.direction = direction;
  }
}

/** A call outlived its timeoutMs option. The server may still run it. */
export class CallTimeoutError extends SkillgateError {
  /**
   * @param {string} method
   * @param {number} timeoutMs
   */
  constructor(method, timeoutMs) {
    super('CALL_TIMEOUT', `${method}: no answer within ${timeoutMs} ms`);
    this.method = method;
    this.timeoutMs = timeoutMs;
  }
}

/**
 * @param {unknown} retry data.retry from the wire
 * @returns {import('../index.js').RetryHint | undefined}
 */
function parseRetry(retry) {
  if (retry === null || typeof retry !== 'object') return undefined;
  const r = /** @type {Record<string, unknown>} */ (retry);
  const delay = r.suggested_delay_ms;
  const attempts = r.max_attempts;
  if (typeof delay !== 'number' || typeof attempts !== 'number') return undefined;
  return { suggestedDelayMs: Math.max(0, delay), maxAttempts: Math.max(0, Math.floor(attempts)) };
}

/** The TCP connection or the TLS handshake failed. */
export class ConnectError extends SkillgateError {
  /**
   * @param {string} message
   * @param {ErrorOptions} [options]
   */
  constructor(message, options) {
    super('CONNECT_FAILED', message, options);
  }
}

/**
 * A blob transfer went wrong on the client's side of the wire: the bytes
 * read do not match the blob's SHA-256, or an answer contradicts the
 * transfer (a received_bytes or next_offset that does not follow).
 */
export class TransferError extends SkillgateError {
  /** @param {string} message */
  constructor(message) {
    super('TRANSFER_FAILED', message);
  }
}
