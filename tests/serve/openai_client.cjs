// Drives a tenzro node's OpenAI-compatible API with the official `openai`
// npm client (tests/serve/openai_process_test.cc installs it and runs this).
// Env: OPENAI_MODULE (path of node_modules/openai), BASE_URL (http://HOST:PORT/v1),
// API_KEY, MODEL. Prints one JSON object with what each call returned.
'use strict';
const OpenAI = require(process.env.OPENAI_MODULE).default;

async function main() {
  const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, maxRetries: 0 });
  const model = process.env.MODEL;
  const out = {};

  const chat = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 16, temperature: 0,
  });
  out.chat = chat;

  const stream = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }], max_tokens: 16, temperature: 0,
    stream: true, stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  out.stream_chunks = chunks;
  out.stream_text = chunks.map((c) => (c.choices[0] && c.choices[0].delta.content) || '').join('');

  const comp = await client.completions.create({
    model, prompt: JSON.parse(process.env.PROMPT_IDS), max_tokens: 8, temperature: 0, logprobs: 2,
  });
  out.completion = comp;

  try {
    await client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'Hi' }] });
    out.not_found = null;
  } catch (e) {
    out.not_found = { status: e.status, error: e.error };
  }
  try {
    await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], n: 2 });
    out.bad_n = null;
  } catch (e) {
    out.bad_n = { status: e.status, error: e.error };
  }
  // Streamed chat with logprobs: one entry per generated token.
  const lpStream = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 6, temperature: 0, logprobs: true,
    top_logprobs: 2, stream: true, stream_options: { include_usage: true },
  });
  const lpEntries = [];
  let lpUsage = null;
  for await (const c of lpStream) {
    if (c.usage) lpUsage = c.usage;
    const ch = c.choices[0];
    if (ch && ch.logprobs && ch.logprobs.content) lpEntries.push(...ch.logprobs.content);
  }
  out.stream_logprobs = { entries: lpEntries, usage: lpUsage };

  // Batching seen from outside: 4 sampled requests at once give what each
  // gives alone (same seeds).
  const sampled = (seed) => client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Tell me a story ' + seed }], max_tokens: 48, temperature: 0.9,
    seed, ignore_eos: true,
  });
  const alone = [];
  for (const seed of [1, 2, 3, 4]) alone.push((await sampled(seed)).choices[0].message.content);
  const together = (await Promise.all([1, 2, 3, 4].map(sampled))).map((r) => r.choices[0].message.content);
  out.batch = { alone, together };

  const models = await client.models.list();
  out.models = models.data;
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
