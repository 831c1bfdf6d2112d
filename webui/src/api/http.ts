/** Configure the generated client: same-origin cookies, and errors thrown as ApiError. */
import { client } from '../client/client.gen';
import { ApiError } from './errors';

let onUnauthorized: () => void = () => {};

/** The app registers what a 401 (expired session) does: forget the user, show the login page. */
export function setUnauthorizedHandler(handler: () => void): void {
  onUnauthorized = handler;
}

client.setConfig({ credentials: 'same-origin' });
/** An answer that is not a success, as the ApiError every caller catches; a 401 also signs out. */
function apiError(status: number, body: unknown): ApiError {
  if (status === 401) onUnauthorized();
  return new ApiError(status, body);
}

client.interceptors.error.use((body, response) => {
  const status = response?.status ?? 0;
  return apiError(status, status === 0 ? { detail: `cannot reach the API: ${String(body)}` } : body);
});

/**
 * Send a file as the request body and report how much of it has gone: fetch reports no upload
 * progress, XMLHttpRequest does. Same origin, so the session cookie and the Origin header the
 * API's CSRF check wants go with it; a refusal is thrown as the same ApiError the client throws.
 */
export function uploadFile<T>(url: string, file: Blob, onProgress: (fraction: number) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open('POST', url);
    request.setRequestHeader('Content-Type', 'application/octet-stream');
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded / event.total);
    };
    request.onload = () => {
      let body: unknown;
      try {
        body = JSON.parse(request.responseText);
      } catch {
        body = { detail: request.responseText.trim() || `HTTP ${request.status}` };
      }
      if (request.status >= 200 && request.status < 300) return resolve(body as T);
      reject(apiError(request.status, body));
    };
    request.onerror = () => reject(apiError(0, { detail: 'cannot reach the API: the upload was cut off' }));
    request.send(file);
  });
}
