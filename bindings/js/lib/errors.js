// Status codes of the kvhash ABI and their translation into JS errors.
// The module decides every failure; this file only names it.

export const Status = Object.freeze({
  OK: 0,
  INVALID_ARGUMENT: -1,
  BUFFER_TOO_SMALL: -2,
  UNKNOWN_HANDLE: -3,
  DECODE: -4,
  REJECTED: -5,
  INTERNAL: -6,
  OUT_OF_BOUNDS: -7,
  NO_MEMORY: -8,
});

const CODES = new Map([
  [Status.INVALID_ARGUMENT, 'KVHASH_ERR_INVALID_ARGUMENT'],
  [Status.BUFFER_TOO_SMALL, 'KVHASH_ERR_BUFFER_TOO_SMALL'],
  [Status.UNKNOWN_HANDLE, 'KVHASH_ERR_UNKNOWN_HANDLE'],
  [Status.DECODE, 'KVHASH_ERR_DECODE'],
  [Status.REJECTED, 'KVHASH_ERR_REJECTED'],
  [Status.INTERNAL, 'KVHASH_ERR_INTERNAL'],
  [Status.OUT_OF_BOUNDS, 'KVHASH_ERR_OUT_OF_BOUNDS'],
  [Status.NO_MEMORY, 'KVHASH_ERR_NO_MEMORY'],
]);

/** The name of a status as the C header spells it. */
export function statusCode(status) {
  return CODES.get(status) ?? `KVHASH_STATUS_${status}`;
}

/** A failed call of a kvhash export (any status but invalid argument). */
export class KvHashError extends Error {
  constructor(message, status, op) {
    super(message);
    this.name = 'KvHashError';
    this.status = status;
    this.code = statusCode(status);
    this.op = op;
  }
}

/**
 * The error for a negative status. Invalid arguments are RangeErrors, like
 * the checks the JS layer makes itself, so callers catch one kind of error
 * for "your input is out of range" wherever it was detected.
 */
export function statusError(op, status, message) {
  const text = `${op}: ${statusCode(status)}${message ? `: ${message}` : ''}`;
  if (status === Status.INVALID_ARGUMENT) {
    const err = new RangeError(text);
    err.status = status;
    err.code = statusCode(status);
    err.op = op;
    return err;
  }
  return new KvHashError(text, status, op);
}
