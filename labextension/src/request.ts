/**
 * The one place the sidebar calls the server: `<base_url>/gpu-assist/api/<endpoint>`.
 * A 400 carries `{error}` with the user-facing message, which is thrown as an Error with that text.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

export async function requestAPI<T>(endpoint: string, query = ''): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url =
    URLExt.join(settings.baseUrl, 'gpu-assist', 'api', endpoint) +
    (query ? '?q=' + encodeURIComponent(query) : '');
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, {}, settings);
  } catch (error) {
    throw new Error('cannot reach the gpu-assist server extension: ' + String(error));
  }
  const text = await response.text();
  let data: any = {};
  try {
    data = text ? JSON.parse(text) : {};
  } catch {
    throw new Error('the server answered something that is not JSON');
  }
  if (!response.ok) {
    throw new Error(data.error || response.statusText);
  }
  return data as T;
}
