// A real npm MCP client (the official TypeScript SDK) driving Ava; run by
// cmd/ava's TestMCPNodeClient:
//   node client.mjs /path/to/ava main|confirm    `ava mcp` over stdio
//   node client.mjs http://127.0.0.1:port/mcp http   the daemon's /mcp over
//                                                    streamable HTTP, with the
//                                                    bearer token AVA_TEST_TOKEN
// It prints one JSON line of what it saw and exits non-zero on failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";

const [target, mode] = process.argv.slice(2);
const model = process.env.AVA_TEST_MODEL;
const seen = { mode };

function check(ok, what) {
  if (!ok) throw new Error(`${what}: ${JSON.stringify(seen)}`);
}

const text = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const client = new Client({ name: "ava-node-test", version: "0.0.0" }, { capabilities: { elicitation: {} } });
seen.asked = 0;
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  seen.asked++;
  seen.question = req.params.message.split("\n")[0];
  return { action: "accept", content: { start: true } };
});
if (mode === "http") {
  const headers = { Authorization: `Bearer ${process.env.AVA_TEST_TOKEN}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } }));
} else {
  await client.connect(new StdioClientTransport({ command: target, args: ["mcp"], env: process.env, stderr: "inherit" }));
}

// statusOf polls subagent_status until the subagent's status is want.
async function statusOf(id, want) {
  let last = "";
  for (let i = 0; i < 300; i++) {
    last = text(await client.callTool({ name: "subagent_status", arguments: { subagent_id: id } }));
    if (last.includes(`"status": "${want}"`)) return want;
    await sleep(50);
  }
  return last;
}

try {
  if (mode === "confirm") {
    const res = await client.callTool({ name: "spawn_subagent", arguments: { role: "researcher", task: "QUICK confirmed", model } });
    seen.status = res.structuredContent?.status;
    check(seen.asked === 1 && seen.status === "success", "confirmed spawn");
  } else {
    seen.tools = (await client.listTools()).tools.map((t) => t.name).sort();
    check(seen.tools.includes("spawn_subagent") && seen.tools.includes("send_subagent") && seen.tools.includes("subagent_status"), "tools");
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

    // In the background: the ID at once, then its status.
    const bg = await client.callTool({ name: "spawn_subagent", arguments: { role: "researcher", task: "SLOW background", model, background: true } });
    seen.background = bg.structuredContent?.status;
    const bgID = bg.structuredContent?.subagent_id ?? "";
    check(!bg.isError && /^S-[0-9a-f]{6}$/.test(bgID) && seen.background !== "success", "background spawn");
    seen.backgroundDone = await statusOf(bgID, "success");
    check(seen.backgroundDone === "success", "background status");

    // Bad arguments: an MCP error, never a spawn. Which kind (an isError
    // result or a JSON-RPC error) is reported for the Go test to check.
    seen.badArgs = [];
    for (const args of [{ role: "researcher", task: 42 }, { task: "no role" }, { role: "no_such_role", task: "x", model }]) {
      try {
        const r = await client.callTool({ name: "spawn_subagent", arguments: args });
        seen.badArgs.push(r.isError ? `isError: ${text(r).slice(0, 160)}` : `accepted: ${JSON.stringify(r.structuredContent)}`);
      } catch (e) {
        seen.badArgs.push(e instanceof McpError ? `jsonrpc ${e.code}: ${e.message.slice(0, 160)}` : `thrown: ${e}`);
      }
    }
    check(seen.badArgs.every((s) => !s.startsWith("accepted") && !s.startsWith("thrown")), "bad arguments");

    // Cancelling the request cancels the subagent.
    const ac = new AbortController();
    const call = client.callTool({ name: "spawn_subagent", arguments: { role: "researcher", task: "BLOCKTASK node", model } },
      undefined, { signal: ac.signal, onprogress: () => {} });
    let id = "";
    for (let i = 0; i < 200 && !id; i++) {
      await sleep(50);
      const m = text(await client.callTool({ name: "list_subagents", arguments: {} })).match(/S-[0-9a-f]{6}(?= researcher running)/);
      if (m) id = m[0];
    }
    check(id !== "", "the blocking subagent runs");
    ac.abort();
    await call.then(() => { throw new Error("the aborted call succeeded"); }, () => {});
    seen.cancelled = await statusOf(id, "cancelled");
    check(seen.cancelled === "cancelled", "cancelled");
    seen.cancelled = id;
    const logs = await client.callTool({ name: "read_ava_logs", arguments: { subagent_id: id } });
    check(!logs.isError, "logs");
  }
  console.log(JSON.stringify(seen));
} finally {
  await client.close();
}
