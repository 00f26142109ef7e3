/**
 * The one place the sidebar calls the server: `<base_url>/gpu-assist/api/<endpoint>`.
 * ServerConnection sends the XSRF token beside the login cookie, so a POST counts as the Jupyter user.
 * An error answer carries `{error, hint?, example?}`; it is thrown as an ApiError with that text.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly hint = '',
    readonly example = ''
  ) {
    super(message);
  }
}

/** GET `endpoint?params`, or POST `body` as JSON when one is given. */
export async function requestAPI<T>(
  endpoint: string,
  params: Record<string, string> = {},
  body?: Record<string, string>
): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const query = new URLSearchParams(Object.entries(params).filter(([, value]) => value !== '')).toString();
  const url = URLExt.join(settings.baseUrl, 'gpu-assist', 'api', endpoint) + (query ? '?' + query : '');
  const init: RequestInit = body === undefined ? {} : { method: 'POST', body: JSON.stringify(body) };
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ApiError('cannot reach the gpu-assist server extension: ' + String(error), 0);
  }
  const text = await response.text();
  let data: any = {};
  try {
    data = text ? JSON.parse(text) : {};
  } catch {
    throw new ApiError(`the server answered ${response.status} with something that is not JSON`, response.status);
  }
  if (!response.ok) {
    throw new ApiError(data.error || response.statusText, response.status, data.hint || '', data.example || '');
  }
  return data as T;
}
