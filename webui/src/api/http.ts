/** Configure the generated client: same-origin cookies, and errors thrown as ApiError. */
import { client } from '../client/client.gen';
import { ApiError } from './errors';

let onUnauthorized: () => void = () => {};

/** The app registers what a 401 (expired session) does: forget the user, show the login page. */
export function setUnauthorizedHandler(handler: () => void): void {
  onUnauthorized = handler;
}

client.setConfig({ credentials: 'same-origin' });
client.interceptors.error.use((body, response) => {
  const status = response?.status ?? 0;
  if (status === 401) onUnauthorized();
  return new ApiError(status, status === 0 ? { detail: `cannot reach the API: ${String(body)}` } : body);
});
