// evalcheck-adk-ts MODULE: a TypeScript/JavaScript ADK agent as a stdio-protocol agent
// (docs/agent-protocol.md) serving concurrent sessions, run by `evalcheck-adk-ts`.
//
// MODULE (.js/.mjs/.cjs, or .ts/.mts/.cts through the project's own tsx) is imported once,
// with the ADK it imports (@iqai/adk or @google/adk, found from MODULE's folder as its own
// imports find it). Every run the checker starts gets a runner of its own with fresh
// in-memory session, artifact and memory services and a session holding the start
// message's state; as many runs at once on this one event loop as the checker's first start
// message offers ("concurrent"; 8 from a checker that offers none), or --concurrent N.
// Each user turn is one runner.runAsync, and the turn's ADK events go back as they are
// (camelCase JSON), with each model call's token usage on its event.
//
// Node's standard library only: the ADK and tsx are the user's project's.

import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { pathToFileURL } from "node:url";

const USAGE = "usage: evalcheck-adk-ts [--concurrent N] [--export NAME] MODULE";
const DEFAULT_CONCURRENT = 8;  // runs at once when the checker offers no number
const MAX_OFFERED = 4096;  // sessions taken up to from a start message's offer
const MIN_NODE = 20;  // the oldest the ADKs run on (tested: 20 and 22)
// The exports looked at, in this order, when --export does not name one.
const AGENT_EXPORTS = ["rootAgent", "root_agent", "agent", "default"];
const TYPESCRIPT = new Set([".ts", ".mts", ".cts", ".tsx"]);
const GOOGLE_AGENT = Symbol.for("google.adk.baseAgent");
const GOOGLE_APP = Symbol.for("google.adk.app");
const USAGE_HOOKED = Symbol("evalcheck.usageHooked");

// The protocol's own copy of stdout; whatever the agent prints goes to stderr (its log).
const protocolWrite = process.stdout.write.bind(process.stdout);
process.stdout.write = process.stderr.write.bind(process.stderr);

class SetupError extends Error {}

// What the agent raised, already said as "Name: message".
class AgentRaised extends Error {}

// The errorCode of the event @iqai/adk's LlmAgent makes of an exception in its run.
const AGENT_EXECUTION_ERROR = "AGENT_EXECUTION_ERROR";

// ------------------------------------------------------------------ the model service's refusals

// A model service's refusal or failure (docs/agent-protocol.md, "When the model service
// refuses"): its HTTP status and google.rpc name. Not the agent's failure: the checker runs
// the run again after a wait.
const REFUSED = { 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 502: "BAD_GATEWAY",
  503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED" };
const REFUSED_BY_NAME = Object.fromEntries(Object.entries(REFUSED).map(([code, name]) => [name, Number(code)]));
// A connection the model's host reset mid-call (not one that could not be made: setup).
const RESET = new Set(["ECONNRESET", "EPIPE", "ECONNABORTED", "UND_ERR_SOCKET", "UND_ERR_CLOSED"]);

// What @google/adk answers a refused model call with: an event of its error, no content.
class ModelRefused extends Error {
  constructor(unavailable, message) {
    super(message);
    this.unavailable = unavailable;
  }
}

// google.rpc.Status in an @google/genai ApiError's message: the error body as JSON, after
// "got status: NAME. " for a stream's error.
function errorBody(text) {
  const start = typeof text === "string" ? text.indexOf("{") : -1;
  if (start < 0) return null;
  try {
    const body = JSON.parse(text.slice(start));
    return body && typeof body === "object" ? (body.error ?? body) : null;
  } catch {
    return null;
  }
}

function retryDelay(body) {
  for (const item of Array.isArray(body?.details) ? body.details : []) {
    const found = /^(\d+(?:\.\d+)?)s$/.exec(String(item?.retryDelay ?? ""));
    if (String(item?.["@type"] ?? "").endsWith("google.rpc.RetryInfo") && found) return Number(found[1]);
  }
  return undefined;
}

function refused(code, name, body) {
  const unavailable = { code: `${code} ${typeof name === "string" && REFUSED_BY_NAME[name] ? name : REFUSED[code]}` };
  const delay = retryDelay(body);
  if (delay !== undefined) unavailable.retryAfter = delay;
  return unavailable;
}

// The protocol's `unavailable` field for what a run raised (@google/genai's ApiError, with its
// status; @iqai/adk keeps only its message, the error body), or null: the agent's own error.
function serviceRefusal(error) {
  for (let e = error, depth = 0; e && depth < 10; e = e.cause, depth++) {
    if (e instanceof ModelRefused) return e.unavailable;
    const body = errorBody(e.message);
    const status = typeof e.status === "number" ? e.status : Number(body?.code);
    if ((e.name === "ApiError" || e instanceof AgentRaised || body?.status) && REFUSED[status]) {
      return refused(status, body?.status, body);
    }
    if (RESET.has(e.code)) return { code: "connection" };
  }
  return null;
}

// An @google/adk event of a refused model call, or null.
function refusedEvent(event) {
  if (!event || event.content || event.errorCode === undefined) return null;
  const code = String(event.errorCode);
  const status = /^\d+$/.test(code) ? Number(code) : REFUSED_BY_NAME[code];
  return REFUSED[status] ? refused(status, undefined, null) : null;
}

function send(message) {
  protocolWrite(`${JSON.stringify(message, jsonSafe)}\n`);
}

function fail(message, { invocationId, session, unavailable } = {}) {
  process.stderr.write(`evalcheck-adk-ts: ${message}\n`);
  const error = { type: "error", message };
  if (invocationId) error.invocationId = invocationId;
  if (session !== undefined) error.session = session;
  if (unavailable) error.unavailable = unavailable;  // the model service refused, not the agent
  send(error);
}

// ADK objects as JSON: Sets (@iqai/adk's longRunningToolIds) as lists, no functions.
function jsonSafe(_key, value) {
  if (value instanceof Set) return [...value];
  if (value instanceof Map) return Object.fromEntries(value);
  if (typeof value === "bigint") return Number(value);
  if (typeof value === "function") return undefined;
  return value;
}

function oneLine(error) {
  const text = error instanceof AgentRaised ? error.message
    : error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.split("\n\n")[0].replace(/\s+/g, " ").trim().slice(0, 600);
}

function parseArgs(argv) {
  const options = { concurrent: null, exportName: null, module: null };  // null: as offered
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--concurrent" || arg === "--export") {
      const value = argv[++i];
      if (value === undefined) return null;
      if (arg === "--export") options.exportName = value;
      else if (/^[1-9][0-9]*$/.test(value)) options.concurrent = Number(value);
      else return null;
    } else if (arg.startsWith("-") || options.module !== null) {
      return null;
    } else {
      options.module = arg;
    }
  }
  return options.module === null ? null : options;
}

// ------------------------------------------------------------------ loading the agent

function resolveFrom(modulePath, specifier) {
  try {
    return createRequire(modulePath).resolve(specifier);
  } catch {
    return null;
  }
}

async function importModule(modulePath, shown) {
  if (TYPESCRIPT.has(path.extname(modulePath))) {
    // The project's own tsx (the loader `tsx file.ts` uses), found as its imports are.
    const tsx = resolveFrom(modulePath, "tsx");
    if (tsx === null) {
      throw new SetupError(`${shown} is TypeScript and tsx is not installed in its project: ` +
        "npm install --save-dev tsx, or give evalcheck-adk-ts the compiled .js (tsc's output)");
    }
    await import(pathToFileURL(tsx).href);
  }
  try {
    return await import(pathToFileURL(modulePath).href);
  } catch (error) {
    throw new SetupError(`cannot load ${shown}: ${oneLine(error)}`);
  }
}

function sdkOf(value, modulePath) {
  if (value === null || typeof value !== "object") return null;
  if (value[GOOGLE_AGENT] === true || value[GOOGLE_APP] === true) {
    return "google";
  }
  const iqai = iqaiSdk(modulePath);
  return iqai !== null && value instanceof iqai.BaseAgent ? "iqai" : null;
}

let iqaiCache;
function iqaiSdk(modulePath) {
  if (iqaiCache === undefined) {
    // @iqai/adk has one entry point (CommonJS) for import and require alike: this is the
    // very module the user's agent was built with, already loaded.
    const resolved = resolveFrom(modulePath, "@iqai/adk");
    iqaiCache = resolved === null ? null : createRequire(modulePath)(resolved);
  }
  return iqaiCache;
}

async function googleSdk(modulePath) {
  // @google/adk's ES module entry, from the package MODULE's imports find. Its agents
  // are recognised by Symbol.for() marks, so either entry's Runner runs them.
  const cjs = resolveFrom(modulePath, "@google/adk");
  if (cjs === null) throw new SetupError("@google/adk is not installed in the agent's project");
  // Its own package.json, above the dist folders' {"type": ...} ones.
  let root = cjs;
  let manifest = null;
  while (manifest?.name !== "@google/adk") {
    if (path.dirname(root) === root) throw new SetupError(`no package.json of @google/adk above ${cjs}`);
    root = path.dirname(root);
    const file = path.join(root, "package.json");
    manifest = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : null;
  }
  const entry = manifest.exports?.["."]?.import ?? manifest.module ?? manifest.main;
  return import(pathToFileURL(path.join(root, typeof entry === "string" ? entry : entry.default)).href);
}

function isThenable(value) {
  return value !== null && (typeof value === "object" || typeof value === "function") &&
    typeof value.then === "function";
}

function isClass(value) {
  return typeof value === "function" && /^class[\s{]/.test(Function.prototype.toString.call(value));
}

// What an export stands for: an agent (or an @google/adk App) with its SDK, or null.
// Accepted: the agent itself; an AgentBuilder (built here); what AgentBuilder.build()
// returns ({agent, runner, ...}); a promise of these; with `call`, a function returning one.
async function agentFrom(value, modulePath, { call }) {
  if (isThenable(value)) value = await value;
  if (call && typeof value === "function" && !isClass(value)) {
    value = await value();
    call = false;
  }
  const sdk = sdkOf(value, modulePath);
  if (sdk !== null) return { agent: value, sdk };
  if (value !== null && typeof value === "object") {
    if (typeof value.build === "function" && typeof value.withModel === "function") {
      return agentFrom(await value.build(), modulePath, { call: false });  // an AgentBuilder
    }
    if ("agent" in value && "runner" in value) {
      return agentFrom(value.agent, modulePath, { call: false });  // AgentBuilder.build()'s
    }
  }
  return null;
}

function describeExports(namespace) {
  const names = Object.keys(namespace).filter((n) => n !== "default" || namespace.default !== undefined);
  return names.length ? names.join(", ") : "none";
}

function subAgentsOf(agent) {
  return Array.isArray(agent?.subAgents) ? agent.subAgents : [];
}

async function findAgent(namespace, modulePath, exportName, shown) {
  // A CommonJS module's exports arrive as `default` too: look there as well.
  const scopes = [namespace];
  if (namespace.default && typeof namespace.default === "object" && !sdkOf(namespace.default, modulePath)) {
    scopes.push(namespace.default);
  }
  const names = exportName === null ? AGENT_EXPORTS : [exportName];
  for (const scope of scopes) {
    for (const name of names) {
      if (!(name in scope)) continue;
      const found = await agentFrom(scope[name], modulePath, { call: true });
      if (found !== null) return found;
      if (exportName !== null) {
        throw new SetupError(`the export ${name} of ${shown} is not an ADK agent, AgentBuilder, ` +
          "built agent or a function returning one");
      }
    }
  }
  if (exportName !== null) {
    throw new SetupError(`${shown} has no export ${exportName} (its exports: ${describeExports(namespace)})`);
  }
  // Else the one agent among the other exports that is no other's sub-agent.
  const agents = [];
  for (const scope of scopes) {
    for (const [name, value] of Object.entries(scope)) {
      if (typeof value === "function") continue;  // a helper, not called unless named
      const found = await agentFrom(value, modulePath, { call: false });
      if (found !== null && !agents.some((a) => a.found.agent === found.agent)) agents.push({ name, found });
    }
  }
  const inside = new Set();
  const walk = (agent) => subAgentsOf(agent).forEach((sub) => { inside.add(sub); walk(sub); });
  agents.forEach(({ found }) => walk(found.agent));
  const roots = agents.filter(({ found }) => !inside.has(found.agent));
  if (roots.length === 1) return roots[0].found;
  if (roots.length > 1) {
    throw new SetupError(`${shown} exports several root agents (${roots.map((r) => r.name).join(", ")}): ` +
      "export the one to evaluate as rootAgent, or name it with --export NAME");
  }
  throw new SetupError(`${shown} exports no ADK agent (its exports: ${describeExports(namespace)}): ` +
    `export the agent to evaluate as ${AGENT_EXPORTS.slice(0, 3).join(", ")} or default: an ` +
    "LlmAgent/Agent (any BaseAgent), an AgentBuilder, what AgentBuilder.build() returns, or a " +
    "function returning one of them (async too); or name the export with --export NAME");
}

// ------------------------------------------------------------------ the two ADKs

// @iqai/adk drops a model response's usageMetadata when it makes the event; an agent's
// afterModelCallback still sees it (a plugin's is not called in 0.5.9). Ours runs first
// and returns nothing, so the agent's own callbacks run as before; it keys the usage by
// the event's EventActions, which the event is then built with.
function hookUsage(agent, usageByActions, seen = new Set()) {
  if (seen.has(agent)) return;
  seen.add(agent);
  if ("canonicalAfterModelCallbacks" in agent && !agent[USAGE_HOOKED]) {
    const record = ({ callbackContext, llmResponse }) => {
      const actions = callbackContext?._eventActions;
      if (actions && llmResponse?.usageMetadata) usageByActions.set(actions, llmResponse.usageMetadata);
      return undefined;
    };
    agent.afterModelCallback = [record, ...agent.canonicalAfterModelCallbacks];
    agent[USAGE_HOOKED] = true;
  }
  subAgentsOf(agent).forEach((sub) => hookUsage(sub, usageByActions, seen));
}

function iqaiRunner(sdk, agent) {
  const usageByActions = new WeakMap();
  hookUsage(agent, usageByActions);
  return {
    async open(appName, userId, state) {
      const runner = new sdk.InMemoryRunner(agent, { appName, plugins: agent.plugins ?? [] });
      const session = await runner.sessionService.createSession(appName, userId, state);
      return {
        async *turn(content) {
          for await (const event of runner.runAsync({ userId, sessionId: session.id, newMessage: content })) {
            if (event.errorCode === AGENT_EXECUTION_ERROR) {
              // @iqai/adk's LlmAgent turns what it raised into this event: a crash, not an answer.
              throw new AgentRaised(event.content?.parts?.[0]?.text ?? `Error: ${event.errorMessage}`);
            }
            const usage = usageByActions.get(event.actions);
            yield usage && !event.usageMetadata ? { ...event, usageMetadata: usage } : event;
          }
        },
        close: () => runner.close?.(),
      };
    },
  };
}

function googleRunner(sdk, root) {
  return {
    async open(appName, userId, state) {
      const runner = root[GOOGLE_APP] === true
        ? new sdk.InMemoryRunner({ app: root })
        : new sdk.InMemoryRunner({ agent: root, appName });
      const session = await runner.sessionService.createSession({ appName: runner.appName, userId, state });
      return {
        async *turn(content) {
          for await (const event of runner.runAsync({ userId, sessionId: session.id, newMessage: content })) {
            const unavailable = refusedEvent(event);
            if (unavailable !== null) {  // the model service refused: no answer of the agent's
              throw new ModelRefused(unavailable, `the model service refused the call: ${event.errorCode} ${event.errorMessage ?? ""}`.trim());
            }
            yield event;
          }
        },
        close: () => runner.close?.(),
      };
    },
  };
}

// ------------------------------------------------------------------ serving runs

function lineReader() {
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity })[Symbol.asyncIterator]();
  return async () => {
    const { value, done } = await lines.next();
    if (done) return null;
    const message = JSON.parse(value);
    if (message === null || typeof message !== "object" || Array.isArray(message)) {
      throw new Error("a protocol message must be a JSON object");
    }
    return message;
  };
}

class Inbox {
  constructor() {
    this.items = [];
    this.waiting = null;
  }

  put(item) {
    if (this.waiting) {
      this.waiting(item);
      this.waiting = null;
    } else {
      this.items.push(item);
    }
  }

  get() {
    if (this.items.length) return Promise.resolve(this.items.shift());
    return new Promise((resolve) => { this.waiting = resolve; });
  }
}

async function serveRun(runners, start, inbox, ready, sessionId) {
  const named = sessionId === null ? {} : { session: sessionId };
  const sessionIn = start.session ?? {};
  const appName = sessionIn.appName || "app";
  const userId = sessionIn.userId || "user";
  const run = await runners.open(appName, userId, sessionIn.state ?? {});
  try {
    // Set up: the checker times the first turn from here.
    send({ ...ready, ...named });
    for (let message = await inbox.get(); message !== null; message = await inbox.get()) {
      if (message.type === "end") return;
      if (message.type !== "user") continue;  // later protocol versions may add messages
      const events = [];
      try {
        for await (const event of run.turn(message.content)) events.push(event);
      } catch (error) {
        const unavailable = serviceRefusal(error);
        fail(error instanceof ModelRefused ? error.message : `the agent raised ${oneLine(error)}`,
          { invocationId: message.invocationId, session: sessionId ?? undefined, unavailable });
        return;
      }
      send({ type: "response", invocationId: message.invocationId, events, ...named });
    }
  } finally {
    try {
      await run.close();
    } catch (error) {  // the run is over: its close is not the agent's answer
      process.stderr.write(`evalcheck-adk-ts: closing a runner: ${oneLine(error)}\n`);
    }
  }
}

// --concurrent N, else what the checker's first start offers (the most runs it may have in
// flight: this one process can take them all), else DEFAULT_CONCURRENT.
function sessionsServed(concurrent, start) {
  if (concurrent !== null) return concurrent;
  const offered = start.concurrent;
  if (Number.isInteger(offered) && offered >= 1) return Math.min(offered, MAX_OFFERED);
  return DEFAULT_CONCURRENT;
}

async function serve(runners, concurrent) {
  // One module for every eval set: the eval set of a run is only read from its start.
  let ready = null;
  const read = lineReader();
  const inboxes = new Map();
  const tasks = new Set();
  let latest = null;
  for (let message = await read(); message !== null; message = await read()) {
    if (message.type === "start") {
      ready ??= { type: "ready", sessions: "many", concurrent: sessionsServed(concurrent, message),
        evalSets: "any" };
      const given = message.session?.id;
      latest = typeof given === "string" ? given : null;
      const inbox = new Inbox();
      inboxes.set(latest, inbox);
      const id = latest;
      const task = serveRun(runners, message, inbox, ready, id)
        .catch((error) => fail(oneLine(error), { session: id ?? undefined }))
        .finally(() => tasks.delete(task));
      tasks.add(task);
      continue;
    }
    const id = "session" in message ? message.session : latest;
    const inbox = inboxes.get(id);
    if (inbox === undefined) continue;  // a run already over (the checker ends a failed run too)
    inbox.put(message);
    if (message.type === "end") inboxes.delete(id);
  }
  for (const inbox of inboxes.values()) inbox.put(null);
  await Promise.allSettled([...tasks]);
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  if (options === null) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const modulePath = path.resolve(options.module);
  const shown = options.module;
  try {
    const major = Number(process.versions.node.split(".")[0]);
    if (major < MIN_NODE) {
      throw new SetupError(`node ${process.versions.node} is too old: evalcheck-adk-ts needs ` +
        `Node.js ${MIN_NODE} or newer (${process.execPath})`);
    }
    if (!fs.existsSync(modulePath) || !fs.statSync(modulePath).isFile()) {
      throw new SetupError(`agent module not found: ${shown}`);
    }
    const namespace = await importModule(modulePath, shown);
    const { agent, sdk } = await findAgent(namespace, modulePath, options.exportName, shown);
    const runners = sdk === "iqai" ? iqaiRunner(iqaiSdk(modulePath), agent)
      : googleRunner(await googleSdk(modulePath), agent);
    await serve(runners, options.concurrent);
    return 0;
  } catch (error) {
    if (process.env.EVALCHECK_ADK_TS_DEBUG) console.error(error);
    fail(error instanceof SetupError ? error.message : oneLine(error));
    return 1;
  }
}

// The ADKs keep timers (telemetry, MCP) that would keep the process alive after the last run.
main().then((status) => process.exit(status));
