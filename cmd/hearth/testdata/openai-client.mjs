// The npm openai package (a client nobody here wrote) against hearth's
// HTTP door: models, a chat completion whole and streamed, embeddings.
// Usage: node openai-client.mjs BASE_URL TOKEN; prints one JSON line.
import OpenAI from "openai";

const [baseURL, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });

const models = await client.models.list();
const ids = [];
for await (const m of models) ids.push(m.id);

const whole = await client.chat.completions.create({
  model: "mnemo",
  messages: [{ role: "user", content: "node whole" }],
});

const stream = await client.chat.completions.create({
  model: "mnemo",
  messages: [{ role: "user", content: "node stream" }],
  stream: true,
});
let streamed = "";
let chunks = 0;
for await (const chunk of stream) {
  streamed += chunk.choices[0]?.delta?.content ?? "";
  chunks++;
}

let embedError = null;
let embedLen = 0;
try {
  const emb = await client.embeddings.create({ model: "any", input: ["hello"] });
  embedLen = emb.data[0].embedding.length;
} catch (e) {
  embedError = e.status ?? String(e);
}

let unknownModel = null;
try {
  await client.chat.completions.create({ model: "nope", messages: [{ role: "user", content: "x" }] });
} catch (e) {
  unknownModel = { status: e.status, code: e.code };
}

console.log(JSON.stringify({ ids, whole: whole.choices[0].message.content, streamed, chunks, embedLen, embedError, unknownModel }));
