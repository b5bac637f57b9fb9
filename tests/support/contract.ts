import { responseErrors } from './openapi-validator';

/**
 * Checks a JSON body against the 200 response schema that openapi.yaml documents for `GET path`
 * (Ajv 2020 on the whole document, so every `$ref` resolves as an integrator's tools resolve it).
 * Throws with every violation listed; returns the body for chaining.
 */
export function expectContract<T>(path: string, body: T, method = 'get'): T {
  const errors = responseErrors(path, method, 200, body);
  if (errors.length > 0) {
    throw new Error(`La réponse de ${method.toUpperCase()} ${path} ne respecte pas openapi.yaml :\n${errors.slice(0, 20).join('\n')}`);
  }
  return body;
}
