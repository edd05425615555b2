// A real npm MCP client (the official TypeScript SDK) driving `ava mcp`
// over stdio; run by cmd/ava's TestMCPNodeClient:
//   node client.mjs /path/to/ava main|confirm
// It prints one JSON line of what it saw and exits non-zero on failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [avaBin, mode] = process.argv.slice(2);
const model = process.env.AVA_TEST_MODEL;
const seen = { mode };

function check(ok, what) {
  if (!ok) throw new Error(`${what}: ${JSON.stringify(seen)}`);
}

const text = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("");

const client = new Client({ name: "ava-node-test", version: "0.0.0" }, { capabilities: { elicitation: {} } });
seen.asked = 0;
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  seen.asked++;
  seen.question = req.params.message.split("\n")[0];
  return { action: "accept", content: { start: true } };
});
await client.connect(new StdioClientTransport({ command: avaBin, args: ["mcp"], env: process.env, stderr: "inherit" }));

try {
  if (mode === "confirm") {
    const res = await client.callTool({ name: "spawn_subagent", arguments: { role: "researcher", task: "QUICK confirmed", model } });
    seen.status = res.structuredContent?.status;
    check(seen.asked === 1 && seen.status === "success", "confirmed spawn");
  } else {
    seen.tools = (await client.listTools()).tools.map((t) => t.name).sort();
    check(seen.tools.includes("spawn_subagent") && seen.tools.includes("send_subagent"), "tools");
    seen.roles = (await client.listResources()).resources.map((r) => r.uri);
    check(seen.roles.includes("ava://roles/researcher"), "roles");

    // Waited, with progress; the SDK validates the structured content
    // against the tool's output schema.
    let progress = 0;
    const res = await client.callTool({ name: "spawn_subagent", arguments: { role: "researcher", task: "SLOW node", model } },
      undefined, { onprogress: () => progress++ });
    seen.spawn = res.structuredContent;
    seen.progress = progress;
    check(!res.isError && res.structuredContent.status === "success" && progress >= 1, "waited spawn");

    const follow = await client.callTool({ name: "send_subagent", arguments: { subagent_id: res.structuredContent.subagent_id, message: "more" } });
    seen.followUp = follow.structuredContent?.status;
    check(seen.followUp === "success", "follow-up");

    // Cancelling the request cancels the subagent.
    const ac = new AbortController();
    const call = client.callTool({ name: "spawn_subagent", arguments: { role: "researcher", task: "BLOCKTASK node", model } },
      undefined, { signal: ac.signal, onprogress: () => {} });
    let id = "";
    for (let i = 0; i < 200 && !id; i++) {
      await new Promise((r) => setTimeout(r, 50));
      const m = text(await client.callTool({ name: "list_subagents", arguments: {} })).match(/S-[0-9a-f]{6}(?= researcher running)/);
      if (m) id = m[0];
    }
    check(id !== "", "the blocking subagent runs");
    ac.abort();
    await call.then(() => { throw new Error("the aborted call succeeded"); }, () => {});
    for (let i = 0; i < 200; i++) {
      seen.cancelled = text(await client.callTool({ name: "subagent_status", arguments: { subagent_id: id } }));
      if (seen.cancelled.includes('"status": "cancelled"')) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    check(seen.cancelled.includes('"status": "cancelled"'), "cancelled");
    seen.cancelled = id;
    const logs = await client.callTool({ name: "read_ava_logs", arguments: { subagent_id: id } });
    check(!logs.isError, "logs");
  }
  console.log(JSON.stringify(seen));
} finally {
  await client.close();
}
