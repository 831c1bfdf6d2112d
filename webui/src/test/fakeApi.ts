import { client } from '../client/client.gen';

export type FakeAnswers = Record<string, { status: number; body?: unknown }>;

/** A request's call ("PUT /api/v1/bgp") and its JSON body, as a test asks what a form sent. */
export type SentBody = { call: string; body: unknown };

/**
 * The API as a component under test sees it: one answer per "METHOD path" (404 naming the call
 * for any other), and every request made, in order. `sent` receives each request's JSON body,
 * `urls` each request as "METHOD path?query" (what a query string carried).
 */
export function fakeApi(answers: FakeAnswers, sent?: SentBody[], urls?: string[]) {
  const requests: string[] = [];
  client.setConfig({
    baseUrl: 'http://fulcrum.test', // the client builds a Request, which wants an absolute URL outside a browser
    fetch: async (input: RequestInfo | URL, init?: RequestInit) => {
      const request = new Request(input, init);
      const call = `${request.method} ${new URL(request.url).pathname}`;
      requests.push(call);
      urls?.push(`${call}${new URL(request.url).search}`);
      const text = request.body ? await request.text() : '';
      if (sent && text) sent.push({ call, body: JSON.parse(text) });
      const answer = answers[call] ?? { status: 404, body: { detail: `no fake answer for ${call}` } };
      const body = answer.body === undefined ? null : JSON.stringify(answer.body);
      return new Response(body, { status: answer.status, headers: { 'Content-Type': 'application/json' } });
    },
  });
  return requests;
}
