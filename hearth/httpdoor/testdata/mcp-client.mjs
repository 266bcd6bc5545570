// The npm MCP client (@modelcontextprotocol/sdk) against hearth's /mcp:
// node mcp-client.mjs URL TOKEN NOTE. Prints what it saw as JSON.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, note] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "mnemo-node-test", version: "1.0.0" });
await client.connect(transport);
const tools = (await client.listTools()).tools.map((t) => t.name).sort();
const search = await client.callTool({ name: "memory_search", arguments: { query: "porto" } });
const propose = await client.callTool({
  name: "memory_propose",
  arguments: { op: "create", path: "knowledge/projects/node.md", content: note, reason: "said so in a node agent" },
});
const read = await client.callTool({ name: "memory_read", arguments: { path: "knowledge/projects/node.md" } });
await client.close();
console.log(JSON.stringify({
  tools,
  search: search.structuredContent,
  propose: propose.structuredContent,
  readError: read.isError ?? false,
}));
