// open.mjs - page.goto that stops the test at once, saying why, when the
// server answers an error: a wtproxy refusal (X-Wtproxy-Refused) is named
// with its reason and body, so the run's log shows what refused it.
export async function open(page, url) {
  const res = await page.goto(url);
  const status = res ? res.status() : 0;
  if (res && status < 400) return res;
  const headers = res ? res.headers() : {};
  const refused = headers['x-wtproxy-refused'];
  const error = headers['x-wtproxy-error'];
  const body = res ? (await res.text()).replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').slice(0, 600) : '';
  throw new Error(`GET ${url} answered ${status}` +
    (refused ? ` X-Wtproxy-Refused: ${refused}` : '') +
    (error ? ` X-Wtproxy-Error: ${error}` : '') + `: ${body}`);
}
