#!/usr/bin/env node
// A complete evalcheck stdio-protocol agent in Node.js (no dependencies).
//
//   evalcheck run examples/weather --agent-command "node examples/agents/node_weather/agent.js"
//
// Read one JSON line, answer one JSON line; exit when stdin closes.
"use strict";
const readline = require("node:readline");

const WEATHER = { Paris: ["sunny", 21], Rome: ["sunny", 24], Oslo: ["rainy", 9] };

function answer(text) {
  const cities = Object.keys(WEATHER)
    .filter((c) => text.includes(c))
    .sort((a, b) => text.indexOf(a) - text.indexOf(b));
  const toolUses = cities.map((city) => ({ name: "get_weather", args: { city } }));
  const toolResponses = cities.map((city) => ({
    name: "get_weather",
    response: { condition: WEATHER[city][0], temp_c: WEATHER[city][1] },
  }));
  let finalResponse = "Which city do you mean?";
  if (cities.length === 1) {
    const [condition, temp] = WEATHER[cities[0]];
    finalResponse = `It is ${condition} in ${cities[0]}, ${temp} degrees Celsius.`;
  } else if (cities.length === 2) {
    const [warm, cold] = [...cities].sort((a, b) => WEATHER[b][1] - WEATHER[a][1]);
    finalResponse = `${warm} is warmer: ${WEATHER[warm][1]} degrees Celsius against ${WEATHER[cold][1]} in ${cold}.`;
  }
  return { finalResponse, toolUses, toolResponses };
}

const rl = readline.createInterface({ input: process.stdin, terminal: false });
rl.on("line", (line) => {
  const message = JSON.parse(line);
  if (message.type === "start") {
    console.error(`starting ${message.evalId} run ${message.run}`); // stderr is the log
    return;
  }
  if (message.type !== "user") return;
  const text = message.content.parts.map((p) => p.text || "").join(" ");
  const reply = { type: "response", invocationId: message.invocationId, ...answer(text) };
  process.stdout.write(JSON.stringify(reply) + "\n");
});
rl.on("close", () => process.exit(0));
