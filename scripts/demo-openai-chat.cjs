// `tenzro demo`: one streamed chat completion through the official `openai`
// npm client. Env: OPENAI_MODULE (path of node_modules/openai), BASE_URL
// (http://HOST:PORT/v1), MODEL, MAX_TOKENS. The text goes to stderr as it
// streams; stdout gets {"text", "usage", "chunks"} at the end.
'use strict';
const OpenAI = require(process.env.OPENAI_MODULE).default;

async function main() {
  const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: 'unused', maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: process.env.MODEL,
    messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: Number(process.env.MAX_TOKENS),
    temperature: 0,
    ignore_eos: true,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '', usage = null, chunks = 0;
  for await (const c of stream) {
    chunks++;
    const d = c.choices.length ? c.choices[0].delta.content : null;
    if (d) {
      text += d;
      process.stderr.write(d);
    }
    if (c.usage) usage = c.usage;
  }
  process.stdout.write(JSON.stringify({ text, usage, chunks }));
}

main().catch((e) => {
  process.stderr.write(`openai client: ${e}\n`);
  process.exit(1);
});
