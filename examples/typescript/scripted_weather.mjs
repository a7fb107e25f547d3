// A scripted, offline stand-in for an LLM, shared by both examples' agents so that they
// run without a key and give the same answers every time (DEMO AND TEST ONLY: your agent
// names a real model, e.g. "gemini-2.5-flash").
//
// It reads a request as a model would (system instruction, tools offered, the conversation
// so far) and scripts the next step: a function call while information is missing, a text
// answer once the tool results are in. Each SDK's model class wraps `nextParts`.

const CITIES = ["Paris", "Rome", "Oslo", "Tokyo", "Lima"];

const texts = (content) => (content?.parts ?? []).filter((p) => p.text).map((p) => p.text).join(" ");

const cities = (text) => CITIES.filter((c) => text.includes(c)).sort((a, b) => text.indexOf(a) - text.indexOf(b));

// Other agents' turns, shown to a model as user text: "For context: ..." (both ADKs), and
// "[agent] said: ..." (@iqai/adk repeats the last one after the tool results).
const fromOtherAgent = (text) => text.startsWith("For context") || /^\[[\w-]+\] said:/.test(text);

// The latest real user text.
function lastUserRequest(contents) {
  for (const content of [...contents].reverse()) {
    const text = texts(content);
    if (content.role === "user" && text && !fromOtherAgent(text)) return text;
  }
  return "";
}

// The tool results the model has not answered yet: those of the latest content with any,
// unless the model spoke after it.
function pendingResults(contents) {
  for (const content of [...contents].reverse()) {
    if (content.role === "model") return [];
    const results = (content.parts ?? []).filter((p) => p.functionResponse).map((p) => p.functionResponse);
    if (results.length) return results;
  }
  return [];
}

function forecastStep(contents, results) {
  if (results.length && results[0].name === "get_forecast") {
    const r = results[0].response;
    return [{ text: `The forecast for ${r.city}: ${r.days.join(", ")}.` }];
  }
  const text = lastUserRequest(contents);
  const days = Number((text.match(/(\d+) days?/) ?? [null, "2"])[1]);
  return [{ functionCall: { name: "get_forecast", args: { city: cities(text)[0] ?? "Paris", days } } }];
}

/** The next model turn: `instruction` the system instruction, `contents` the conversation,
 * `toolNames` the tools offered, `transferArg` the name of transfer_to_agent's argument
 * (`agentName` in @google/adk, `agent_name` in @iqai/adk and in Python's google-adk). */
export function nextParts(instruction, contents, toolNames, transferArg) {
  const user = (String(instruction ?? "").match(/The user is (\w+)/) ?? [null, "friend"])[1];
  const results = pendingResults(contents);
  if (toolNames.includes("get_forecast")) return forecastStep(contents, results);
  if (results.length && results[0].name === "get_weather") {
    const sentences = results.map(({ response: r }) =>
      `it is ${r.condition} in ${r.city}, ${r.temperature} degrees ${r.units}`);
    if (results.length > 1) {
      const warmest = results.reduce((a, b) => (b.response.temperature > a.response.temperature ? b : a));
      return [{ text: `${user}, ${sentences.join(" and ")}. ${warmest.response.city} is warmer.` }];
    }
    return [{ text: `${user}, ${sentences[0]}.` }];
  }
  const text = lastUserRequest(contents);
  if (text.toLowerCase().includes("forecast")) {
    return [{ text: "Let me ask our forecast specialist." },
      { functionCall: { name: "transfer_to_agent", args: { [transferArg]: "forecast_agent" } } }];
  }
  const named = cities(text);
  if (!named.length) return [{ text: `Sorry ${user}, which city do you mean?` }];
  return named.map((city) => ({ functionCall: { name: "get_weather", args: { city } } }));
}

/** Token counts as a model reports them, from the size of the request and the answer. */
export function usage(contents, parts) {
  const prompt = 100 + Math.floor(contents.reduce((n, c) => n + texts(c).length, 0) / 4);
  return { promptTokenCount: prompt, candidatesTokenCount: 10 * parts.length,
    totalTokenCount: prompt + 10 * parts.length };
}

export const WEATHER = { Paris: ["sunny", 21], Rome: ["clear", 24], Oslo: ["rainy", 9],
  Tokyo: ["cloudy", 18], Lima: ["foggy", 16] };

/** The weather tool's answer, in the units the session state asks for. */
export function weather(city, units = "celsius") {
  const [condition, celsius] = WEATHER[city] ?? ["unknown", 0];
  const temperature = units === "celsius" ? celsius : Math.round(celsius * 9 / 5 + 32);
  return { city, condition, temperature, units };
}

/** The forecast tool's answer. */
export function forecast(city, days) {
  const cycle = [(WEATHER[city] ?? ["unknown"])[0], "windy", "sunny", "rainy"];
  return { city, days: Array.from({ length: days }, (_, i) => cycle[i % cycle.length]) };
}
