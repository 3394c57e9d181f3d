// End-to-end check of sluice's OpenAI-compatible front door with the
// official `openai` npm package, used unchanged (only its base URL points
// at sluice).
//
//   node web/e2e/openai-sdk.mjs <sluice base URL> <expected answer>
//
// The sluice under test is expected to run in front of a scripted
// upstream (web/openai_sdk_e2e_test.go sets it up):
//   - a question containing "partial" is cut after some output (the
//     upstream stalls past the idle timeout);
//   - a question containing "hold" stalls before its first token, holding
//     the budget's only slot (budget 1);
//   - any other question is answered with <expected answer>.
// The last line printed is "openai-sdk e2e: N passed, M failed"; the exit
// code is 0 only when nothing failed.

import OpenAI, { APIError } from 'openai';
import { harness } from './sdk-harness.mjs';

const { root, expected, client, check, test, getJSON, task, waitBudget, finish } = harness('openai-sdk');
const model = 'sim-1';
const user = (content) => [{ role: 'system', content: 'be brief' }, { role: 'user', content }];

// readStream collects a chat.completion.chunk stream.
async function readStream(stream) {
  const out = { text: '', role: '', finish: [], usage: null, ids: new Set(), chunks: 0 };
  for await (const chunk of stream) {
    out.chunks++;
    out.ids.add(chunk.id);
    check(chunk.object === 'chat.completion.chunk', 'object is chat.completion.chunk');
    if (chunk.usage) out.usage = chunk.usage;
    const c = chunk.choices[0];
    if (!c) continue;
    if (c.delta.role) out.role = c.delta.role;
    if (c.delta.content) out.text += c.delta.content;
    if (c.finish_reason) out.finish.push(c.finish_reason);
  }
  return out;
}

await test('GET /v1/models lists the default model', async () => {
  const page = await client.models.list();
  check(page.data.some((m) => m.id === model && m.object === 'model' && m.owned_by === 'sluice'), JSON.stringify(page.data));
});

await test('non-streaming answer is the exact upstream text', async () => {
  const { data, response } = await client.chat.completions
    .create({ model, messages: user('how many SKU-10234 in zone A?') })
    .withResponse();
  const id = response.headers.get('x-task-id');
  check(data.object === 'chat.completion', 'object');
  check(data.id === 'chatcmpl-' + id, `id ${data.id}`);
  check(data.choices[0].message.role === 'assistant', 'role');
  check(data.choices[0].message.content === expected, `content ${JSON.stringify(data.choices[0].message.content)}`);
  check(data.choices[0].finish_reason === 'stop', 'finish_reason stop');
  check(data.usage && data.usage.total_tokens > 0, 'usage');
  check(response.headers.get('x-cache') === 'MISS', 'x-cache MISS');
  const v = await task(id);
  check(v.status === 'done' && v.text === expected, `task ${JSON.stringify(v)}`);
});

await test('streaming answer is the exact upstream text, with usage', async () => {
  const { data: stream, response } = await client.chat.completions
    .create({ model, messages: user('where is order 77?'), stream: true, stream_options: { include_usage: true } })
    .withResponse();
  const r = await readStream(stream);
  check(r.text === expected, `text ${JSON.stringify(r.text)}`);
  check(r.role === 'assistant', 'first delta has role assistant');
  check(r.finish.length === 1 && r.finish[0] === 'stop', `finish ${r.finish}`);
  check(r.usage && r.usage.completion_tokens > 0, 'usage chunk');
  const id = response.headers.get('x-task-id');
  check(r.ids.size === 1 && r.ids.has('chatcmpl-' + id), 'chunk ids');
  const v = await task(id);
  check(v.text === r.text, 'task text equals streamed text');
});

await test('a repeated question is a cache hit with the same text', async () => {
  const { data: stream, response } = await client.chat.completions
    .create({ model, messages: user('where is order 77?'), stream: true })
    .withResponse();
  const r = await readStream(stream);
  check(response.headers.get('x-cache') === 'HIT', `x-cache ${response.headers.get('x-cache')}`);
  check(r.text === expected, 'hit text');
});

await test('sluice options in the body: namespace and nocache', async () => {
  const { response } = await client.chat.completions
    .create({ model, messages: user('where is order 77?'), sluice: { namespace: 'wms-e2e', nocache: true } })
    .withResponse();
  check(response.headers.get('x-cache') === 'BYPASS', `x-cache ${response.headers.get('x-cache')}`);
  const v = await task(response.headers.get('x-task-id'));
  check(v.namespace === 'wms-e2e', `namespace ${v.namespace}`);
});

await test('streaming partial answer: notice as content, finish_reason length', async () => {
  const { data: stream, response } = await client.chat.completions
    .create({ model, messages: user('partial answer, streamed'), stream: true })
    .withResponse();
  const r = await readStream(stream);
  const v = await task(response.headers.get('x-task-id'));
  check(v.status === 'partial' && v.text.length > 0, `task ${JSON.stringify(v)}`);
  check(r.text.startsWith(v.text + '\n\n[') && r.text.endsWith(']'), `text ${JSON.stringify(r.text)}`);
  check(r.finish.length === 1 && r.finish[0] === 'length', `finish ${r.finish}`);
});

await test('non-streaming partial answer', async () => {
  const { data, response } = await client.chat.completions
    .create({ model, messages: user('partial answer, whole') })
    .withResponse();
  const v = await task(response.headers.get('x-task-id'));
  const c = data.choices[0];
  check(c.finish_reason === 'length', `finish ${c.finish_reason}`);
  check(v.status === 'partial' && c.message.content.startsWith(v.text + '\n\n['), `content ${JSON.stringify(c.message.content)}`);
});

await test('bad input is a 400 BadRequestError', async () => {
  try {
    await client.chat.completions.create({ model, messages: [] });
    throw new Error('no error');
  } catch (err) {
    check(err instanceof OpenAI.BadRequestError && err.status === 400, `${err}`);
    check(err.code === 'invalid_request', `code ${err.code}`);
  }
});

await test('overload is a 503 APIError with Retry-After, streaming or not', async () => {
  await waitBudget((b) => b.in_flight === 0, 'idle');
  const hold = new AbortController();
  // The held call resolves only at its first token, which never comes.
  const held = client.chat.completions
    .create({ model, messages: user('hold the slot'), stream: true }, { signal: hold.signal })
    .catch(() => {});
  try {
    await waitBudget((b) => b.in_flight >= 1, 'taken');
    for (const stream of [false, true]) {
      try {
        const r = await client.chat.completions.create({ model, messages: user('one more ' + stream), stream });
        if (stream) await readStream(r);
        throw new Error('no error');
      } catch (err) {
        check(err instanceof APIError && err.status === 503, `stream=${stream}: ${err}`);
        check(err.code === 'overloaded', `code ${err.code}`);
        check(err.headers && err.headers.get('retry-after'), 'retry-after');
      }
    }
  } finally {
    hold.abort();
    await held;
  }
});

finish();
