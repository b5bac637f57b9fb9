/**
 * Whether an error means that PostgreSQL cannot answer now (down, unreachable, frozen, restarting,
 * out of connections, or a statement past its time limit), as opposed to a fault of ours: the
 * first is a 503 with Retry-After, since the same request may well succeed in a few seconds.
 */

/** Node's network errors on the way to the database. */
const networkCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * SQLSTATEs: class 08 (connection exception), 53300 (too many connections), 57014 (statement
 * cancelled: statement_timeout), 57P01 to 57P05 (the server is shutting down, crashed, cannot accept
 * connections yet, idle session timeout).
 */
const unavailableStates = /^(08...|53300|57014|57P0[1-5])$/;

/** pg's own messages for a connection it could not get or lost (they carry no code). */
const driverMessages =
  /timeout exceeded when trying to connect|Connection terminated|Query read timeout|Client has encountered a connection error|connection timeout/i;

export function isDatabaseUnavailable(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (networkCodes.has(code) || unavailableStates.test(code))) return true;
  return typeof message === 'string' && driverMessages.test(message);
}
