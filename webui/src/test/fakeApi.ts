import { client } from '../client/client.gen';

export type FakeAnswers = Record<string, { status: number; body?: unknown }>;

/**
 * The API as a component under test sees it: one answer per "METHOD path" (404 naming the call
 * for any other), and every request made, in order.
 */
export function fakeApi(answers: FakeAnswers) {
  const requests: string[] = [];
  client.setConfig({
    baseUrl: 'http://fulcrum.test', // the client builds a Request, which wants an absolute URL outside a browser
    fetch: (input: RequestInfo | URL, init?: RequestInit) => {
      const request = new Request(input, init);
      const call = `${request.method} ${new URL(request.url).pathname}`;
      requests.push(call);
      const answer = answers[call] ?? { status: 404, body: { detail: `no fake answer for ${call}` } };
      const body = answer.body === undefined ? null : JSON.stringify(answer.body);
      return Promise.resolve(new Response(body, { status: answer.status, headers: { 'Content-Type': 'application/json' } }));
    },
  });
  return requests;
}
