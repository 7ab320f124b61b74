// A client of `obelisk mcp-server` built on the official TypeScript SDK,
// driven by TestNodeClient (cmd/obelisk/mcpclients_test.go). It connects
// over stdio (it starts the server) or over streamable HTTP (to a server
// the test started), lists the tools, checks a broken plan and gets
// diagnostics with fixes, checks and runs the repaired plan against
// @modelcontextprotocol/server-filesystem and gets its output, and sees a
// step of an irreversible tool wait for approval. A second client, one
// that can ask its user (elicitation), approves the same kind of step.
//
//   node client.mjs stdio DIR COMMAND ARGS...
//   node client.mjs http DIR URL TOKEN
//
// DIR is the directory the filesystem server serves. It prints one JSON
// object of what it saw, and exits 1 at the first thing that is wrong.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, dir, ...rest] = process.argv.slice(2);
const seen = { mode };

function fail(msg) {
  console.error(`client.mjs (${mode}): ${msg}`);
  console.log(JSON.stringify(seen));
  process.exit(1);
}

function transport() {
  if (mode === "stdio") {
    const [command, ...args] = rest;
    return new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
  }
  const [url, token] = rest;
  return new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
}

// connect connects a client; with approve set, the client can ask its
// user, who answers approve.
async function connect(approve) {
  const capabilities = approve === undefined ? {} : { elicitation: {} };
  const client = new Client({ name: "obelisk-test", version: "1.0.0" }, { capabilities });
  if (approve !== undefined) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      seen.asked = req.params.message;
      return { action: "accept", content: { approve } };
    });
  }
  await client.connect(transport());
  return client;
}

// call calls a tool and returns its text.
async function call(client, name, args) {
  const res = await client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
  return { text: res.content.map((c) => c.text).join(""), isError: !!res.isError };
}

const broken = `input {
  dir: string
}

a: fs.read_text_file(paht: $input.dir + "/a.txt") -> $state.a
b: fs.read_text_file(path: $input.dir + "/b.txt") -> $state.b

output {
  a: $state.a.content
  b: $state.b.content
}
`;
const fixed = broken.replace("paht:", "path:");
const write = `input {
  dir: string
}

w: fs.write_file(path: $input.dir + "/out.txt", content: "written by a plan") -> $state.w
  approve "Write out.txt?"

output $state.w.content
`;

const client = await connect(undefined);
const tools = (await client.listTools()).tools.map((t) => t.name).sort();
seen.tools = tools;
for (const want of ["check_plan", "dry_run_plan", "get_primer", "resume_run", "run_plan", "run_status", "search_tools"]) {
  if (!tools.includes(want)) fail(`no tool ${want} in ${tools}`);
}
if (tools.some((t) => t.includes("approve"))) fail(`a tool approves: ${tools}`);

const found = await call(client, "search_tools", { query: "read a text file" });
if (!found.text.includes("tool fs.read_text_file(")) fail(`search_tools did not find fs.read_text_file:\n${found.text}`);

const report = JSON.parse((await call(client, "check_plan", { plan: broken })).text);
seen.brokenOK = report.ok;
seen.diagnostics = report.diagnostics.map((d) => ({ code: d.code, message: d.message, fix: d.fix && d.fix.message }));
if (report.ok || !report.diagnostics.some((d) => d.fix && d.fix.edits && d.fix.edits.length > 0)) {
  fail(`check_plan of a broken plan gave no fix: ${JSON.stringify(report)}`);
}

const clean = JSON.parse((await call(client, "check_plan", { plan: fixed, input: { dir } })).text);
if (!clean.ok) fail(`the fixed plan does not check: ${JSON.stringify(clean)}`);

const ran = JSON.parse((await call(client, "run_plan", { plan: fixed, input: { dir } })).text);
seen.run = ran;
if (ran.status !== "completed") fail(`run_plan: ${JSON.stringify(ran)}`);

const waiting = JSON.parse((await call(client, "run_plan", { plan: write, input: { dir } })).text);
seen.waiting = waiting;
if (waiting.status !== "waiting" || !waiting.next.includes("obelisk approve")) fail(`the write did not wait: ${JSON.stringify(waiting)}`);
const status = JSON.parse((await call(client, "run_status", { run: waiting.run })).text);
if (status.status !== "waiting") fail(`run_status of the waiting run: ${JSON.stringify(status)}`);
await client.close();

// A client that can ask its user: the person approves the write.
const asking = await connect(true);
const approved = JSON.parse((await call(asking, "run_plan", { plan: write.replace("out.txt", "approved.txt"), input: { dir } })).text);
seen.approved = approved;
if (approved.status !== "completed") fail(`the approved write: ${JSON.stringify(approved)}`);
await asking.close();

console.log(JSON.stringify(seen));
