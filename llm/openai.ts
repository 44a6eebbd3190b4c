/**
 * The model client: the `openai` package against any OpenAI-compatible endpoint. OPENAI_API_KEY and
 * OPENAI_BASE_URL are read by the package itself unless given explicitly (the replayed model of the demo).
 * Retries are Temporal's job (the activity retry policy), so the client makes exactly one attempt per call.
 */
import OpenAI from 'openai';

export interface ModelEndpoint {
  apiKey?: string;
  baseURL?: string;
  timeoutMs: number;
  /** Extra headers on every request (gateways often want some); longrun adds x-longrun-worker. */
  headers?: Record<string, string>;
}

export function createOpenAI(endpoint: ModelEndpoint): OpenAI {
  return new OpenAI({
    ...(endpoint.apiKey !== undefined ? { apiKey: endpoint.apiKey } : {}),
    ...(endpoint.baseURL !== undefined ? { baseURL: endpoint.baseURL } : {}),
    timeout: endpoint.timeoutMs,
    maxRetries: 0,
    ...(endpoint.headers ? { defaultHeaders: endpoint.headers } : {}),
  });
}

/**
 * An endpoint's base URL as errors and logs show it: without the credentials a URL may carry (`user:key@`, its query
 * and fragment); a base URL that does not parse is shown as `an endpoint with an unparsable base URL`.
 */
export function shownEndpoint(baseURL: string): string {
  try {
    const url = new URL(baseURL);
    url.username = '';
    url.password = '';
    url.search = '';
    url.hash = '';
    return url.toString().replace(/\/$/, '');
  } catch {
    return 'an endpoint with an unparsable base URL';
  }
}
