// An MCP server built on the official TypeScript SDK that exits in the
// middle of a call; a role uses it in cmd/ava's TestMCPRoleServerCrashes:
//   node crashy-server.mjs
// Tools: crash (the process exits before answering) and echo {text}.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const server = new Server({ name: "crashy", version: "0.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    { name: "crash", description: "Exits the server mid-call.", inputSchema: { type: "object", properties: {} } },
    { name: "echo", description: "Says the text back, with the server's PID.", inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  if (req.params.name === "crash") {
    process.stderr.write(`crashy server ${process.pid} exits mid-call on purpose\n`);
    process.exit(7);
  }
  return { content: [{ type: "text", text: `echo from ${process.pid}: ${req.params.arguments?.text}` }] };
});
await server.connect(new StdioServerTransport());
