// The LangGraph.js peer of the benchmark comparison: runs a generated plan
// (the bare JSON array of calls) as a LangGraph StateGraph and prints one
// JSON line in the peers' format (peer "langgraph-js").
//
//   node bench/peers/langgraph/run.mjs [--warmup N] PLAN.json
//
// The mapping is the natural one for LangGraph:
//   - a node per call, running the "work" tool (sleep ms, return 1 + the
//     largest input) and returning {slots: {slot: value}};
//   - edges from the data dependencies: START to each call that reads no
//     slot, one edge from a single writer, and for a call reading several
//     slots the fan-in edge addEdge([writers…], call), which LangGraph runs
//     once all the writers have; calls nobody reads go to END;
//   - one state key "slots" whose reducer merges each node's update into
//     the dict in place (a write is O(1));
//   - recursionLimit (25 supersteps by default) raised to the plan's depth
//     plus a margin, or any chain longer than 25 calls fails.
// build_ms is reading the plan, building the StateGraph and compile();
// wall_ms is invoke().

import { readFileSync } from "node:fs";
import { setMaxListeners } from "node:events";
import { basename } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";

// LangGraph adds an abort listener per running task to one signal; past 10
// parallel tasks Node prints a warning that is noise here.
setMaxListeners(0);

const STATE = "\u2020state.";

function usage() {
  console.error("usage: node run.mjs [--warmup N] PLAN.json");
  process.exit(2);
}

// readCalls maps each call to its latency, the slots it reads, the calls
// that write them, and its own slot.
function readCalls(file) {
  const raw = JSON.parse(readFileSync(file, "utf8"));
  const writerOf = new Map(raw.map((c, i) => [c._outputPath, i]));
  return raw.map((c, i) => {
    const reads = [];
    const writers = [];
    for (const [key, val] of Object.entries(c)) {
      if (key.startsWith("_") || typeof val !== "string" || !val.startsWith(STATE)) continue;
      const w = writerOf.get(val);
      if (w === undefined) throw new Error(`call ${i} reads ${val}, which no call writes`);
      reads.push(val.slice(STATE.length));
      if (!writers.includes(w)) writers.push(w);
    }
    return { ms: Number(c.ms ?? 0), slot: c._outputPath.slice(STATE.length), reads, writers };
  });
}

function compileGraph(calls) {
  const State = Annotation.Root({
    slots: Annotation({ reducer: (all, update) => Object.assign(all, update), default: () => ({}) }),
  });
  const graph = new StateGraph(State);
  const id = (i) => `call${i}`;
  calls.forEach((c, i) => {
    graph.addNode(id(i), async (state) => {
      if (c.ms > 0) await sleep(c.ms);
      let best = 0;
      for (const r of c.reads) best = Math.max(best, state.slots[r] ?? 0);
      return { slots: { [c.slot]: best + 1 } };
    });
  });
  const read = new Array(calls.length).fill(false);
  calls.forEach((c, i) => {
    if (c.writers.length === 0) graph.addEdge(START, id(i));
    else if (c.writers.length === 1) graph.addEdge(id(c.writers[0]), id(i));
    else graph.addEdge(c.writers.map(id), id(i));
    for (const w of c.writers) read[w] = true;
  });
  calls.forEach((_, i) => read[i] || graph.addEdge(id(i), END));
  return graph.compile();
}

async function main() {
  const args = process.argv.slice(2);
  let warmup = 0;
  let file = null;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--warmup") warmup = Number(args[++i]);
    else if (file === null) file = args[i];
    else usage();
  }
  if (file === null) usage();
  const meta = JSON.parse(readFileSync(file.replace(/\.json$/, ".meta.json"), "utf8"));
  let r;
  for (let round = 0; round <= warmup; round++) {
    const t0 = performance.now();
    const calls = readCalls(file);
    const app = compileGraph(calls);
    const t1 = performance.now();
    const final = await app.invoke({ slots: {} }, { recursionLimit: meta.depth + 10 });
    const t2 = performance.now();
    const depth = Math.max(0, ...Object.values(final.slots));
    r = { build: t1 - t0, wall: t2 - t1, ok: depth === meta.depth && Object.keys(final.slots).length === calls.length };
  }
  const n = meta.nodes;
  console.log(JSON.stringify({
    peer: "langgraph-js", plan: basename(file, ".json"), nodes: n,
    wall_ms: r.wall, us_per_node: (r.wall * 1000) / Math.max(1, n),
    critical_path_ms: meta.critical_path_ms, build_ms: r.build, depth_ok: r.ok, warmup,
    max_rss_mb: process.resourceUsage().maxRSS / 1024,
  }));
}

main().catch((e) => {
  console.error(e?.stack ?? String(e));
  process.exit(1);
});
