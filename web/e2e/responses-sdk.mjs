// End-to-end check of sluice's OpenAI Responses door with the official
// `openai` npm package, used unchanged (only its base URL points at
// sluice).
//
//   node web/e2e/responses-sdk.mjs <sluice base URL> <expected answer>
//
// The sluice under test runs in front of a scripted upstream
// (web/openai_sdk_e2e_test.go, TestResponsesNodeSDK, sets it up):
//   - a question containing "partial" is cut after some output;
//   - a question containing "hold" stalls before its first token, holding
//     the budget's only slot (budget 1);
//   - a question containing "slow" is answered with <expected answer>, a
//     chunk at a time with gaps;
//   - any other question is answered with <expected answer>.
// The last line printed is "responses-sdk e2e: N passed, M failed"; the
// exit code is 0 only when nothing failed.

import OpenAI, { APIError } from 'openai';
import { harness } from './sdk-harness.mjs';

const { root, expected, client, check, test, getJSON, task, waitBudget, finish } = harness('responses-sdk');
const model = 'sim-1';

// collect reads a Responses event stream (keep-alives skipped); stop, when
// given, ends the read early (the client drops the stream).
async function collect(stream, stop) {
  const evs = [];
  for await (const ev of stream) {
    if (ev.type === 'keepalive') continue;
    evs.push(ev);
    if (stop && stop(evs)) {
      stream.controller.abort();
      break;
    }
  }
  return evs;
}

// shape checks a whole stream from sequence number `first`: consecutive
// integers, the documented order, and returns the deltas' text and the
// final response.
function shape(evs, first, terminal) {
  evs.forEach((ev, i) => check(Number.isInteger(ev.sequence_number) && ev.sequence_number === first + i, `event ${i} ${ev.type} seq ${ev.sequence_number}`));
  if (first === 0) {
    const open = ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added'];
    open.forEach((t, i) => check(evs[i].type === t, `event ${i} is ${evs[i].type}, want ${t}`));
  }
  const n = evs.length;
  const tail = ['response.output_text.done', 'response.content_part.done', 'response.output_item.done', terminal];
  tail.forEach((t, i) => check(evs[n - 4 + i].type === t, `event ${n - 4 + i} is ${evs[n - 4 + i].type}, want ${t}`));
  const text = evs.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
  const final = evs[n - 1].response;
  check(final.object === 'response', 'final object');
  check(evs[n - 4].text === final.output[0].content[0].text, 'output_text.done is the final text');
  return { text, final };
}

const ask = (input, extra = {}) => ({ model, instructions: 'be brief', input, ...extra });

await test('non-streaming: exact text, object response, the id is the task id', async () => {
  const { data, response } = await client.responses.create(ask('how many SKU-10234 in zone A?')).withResponse();
  check(data.object === 'response' && data.status === 'completed', JSON.stringify(data));
  check(data.output_text === expected, `output_text ${JSON.stringify(data.output_text)}`);
  check(data.id === response.headers.get('x-task-id'), 'id is X-Task-Id');
  const v = await task(data.id);
  check(v.status === 'done' && v.text === expected, `task ${JSON.stringify(v)}`);
  const again = await client.responses.retrieve(data.id);
  check(again.output_text === expected && again.status === 'completed', 'retrieve');
});

await test('message items as input', async () => {
  const r = await client.responses.create({
    model,
    input: [
      { role: 'developer', content: 'be brief' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'where is order 12?' }] },
    ],
  });
  check(r.output_text === expected, `output_text ${JSON.stringify(r.output_text)}`);
});

await test('streaming: exact text, sequence numbers, replay gives the same events', async () => {
  const evs = await collect(await client.responses.create(ask('where is order 77?', { stream: true })));
  const { text, final } = shape(evs, 0, 'response.completed');
  check(final.status === 'completed', `final ${JSON.stringify(final)}`);
  check(text === expected, `text ${JSON.stringify(text)}`);
  const replay = await collect(await client.responses.retrieve(final.id, { stream: true }));
  check(JSON.stringify(replay) === JSON.stringify(evs), 'replay equals the original');
  for (const after of [0, 3, 4, evs.length - 3]) {
    const rest = await collect(await client.responses.retrieve(final.id, { stream: true, starting_after: after }));
    check(JSON.stringify(rest) === JSON.stringify(evs.slice(after + 1)), `starting_after ${after}`);
  }
});

await test('resume after a cut while running: no duplicate, no gap', async () => {
  const head = await collect(await client.responses.create(ask('slow answer', { stream: true })),
    (evs) => evs.filter((e) => e.type === 'response.output_text.delta').length === 2);
  const last = head[head.length - 1].sequence_number;
  const rest = await collect(await client.responses.retrieve(head[0].response.id, { stream: true, starting_after: last }));
  const { text } = shape(head.concat(rest), 0, 'response.completed');
  check(text === expected, `text ${JSON.stringify(text)}`);
});

await test('background, polled; background streamed', async () => {
  const r = await client.responses.create(ask('background please', { background: true, metadata: { order: '77' } }));
  check(['queued', 'in_progress', 'completed'].includes(r.status) && r.background === true, JSON.stringify(r));
  check(r.metadata.order === '77', 'metadata echoed');
  await task(r.id);
  const done = await client.responses.retrieve(r.id);
  check(done.status === 'completed' && done.output_text === expected, JSON.stringify(done));
  const evs = await collect(await client.responses.create(ask('background streamed', { background: true, stream: true })));
  check(shape(evs, 0, 'response.completed').text === expected, 'background stream text');
});

await test('cut answer: incomplete, the partial text and the notice', async () => {
  const r = await client.responses.create(ask('partial answer'));
  const v = await task(r.id);
  check(r.status === 'incomplete' && r.incomplete_details && r.incomplete_details.reason, JSON.stringify(r));
  check(v.status === 'partial' && r.output_text.startsWith(v.text + '\n\n[') && r.output_text.endsWith(']'), `text ${JSON.stringify(r.output_text)}`);
  const evs = await collect(await client.responses.create(ask('partial answer, streamed', { stream: true })));
  const { text, final } = shape(evs, 0, 'response.incomplete');
  check(final.status === 'incomplete' && text === final.output[0].content[0].text, 'streamed cut');
});

await test('cancel: cancelled, and again', async () => {
  await waitBudget((b) => b.in_flight === 0, 'idle');
  const r = await client.responses.create(ask('hold, then cancel', { background: true }));
  for (let i = 0; i < 2; i++) {
    const c = await client.responses.cancel(r.id);
    check(c.status === 'cancelled' && c.id === r.id, `cancel ${i}: ${JSON.stringify(c)}`);
  }
  const v = await task(r.id);
  check(v.status === 'cancelled', `task ${v.status}`);
  await client.responses.delete(r.id);
});

await test('unsupported features: a 400 each', async () => {
  const cases = {
    tools: { tools: [{ type: 'function', name: 'f', parameters: { type: 'object' }, strict: false }] },
    previous_response_id: { previous_response_id: 'resp_1' },
    reasoning: { reasoning: { effort: 'low' } },
  };
  for (const [name, extra] of Object.entries(cases)) {
    try {
      await client.responses.create(ask('q', extra));
      throw new Error(name + ': no error');
    } catch (err) {
      check(err instanceof OpenAI.BadRequestError && err.status === 400 && err.message.includes(name + ' is not supported'), `${name}: ${err}`);
    }
  }
  try {
    await client.responses.create({ model, input: [{ type: 'function_call_output', call_id: 'c', output: 'x' }] });
    throw new Error('function_call_output: no error');
  } catch (err) {
    check(err instanceof OpenAI.BadRequestError && err.message.includes('not supported'), `items: ${err}`);
  }
});

await test('overload is a 503 APIError with Retry-After, streaming or not', async () => {
  await waitBudget((b) => b.in_flight === 0, 'idle');
  const hold = new AbortController();
  const held = client.responses.create(ask('hold the slot', { stream: true }), { signal: hold.signal }).catch(() => {});
  try {
    await waitBudget((b) => b.in_flight >= 1, 'taken');
    for (const stream of [false, true]) {
      try {
        const r = await client.responses.create(ask('one more ' + stream, { stream }));
        if (stream) await collect(r);
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
