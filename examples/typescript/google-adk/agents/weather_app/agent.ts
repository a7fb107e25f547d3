// A @google/adk agent, evaluated as it is through `adk api_server` (docs/adk-typescript.md):
//
//   evalcheck run evals --agent-url http://127.0.0.1:8000 \
//     --agent-server-command "npx adk api_server --port 8000 agents"
//
// An LlmAgent with a tool that reads and writes session state, and a sub-agent reached by
// transfer_to_agent. Its model is scripted (offline, deterministic: ../../scripted_weather.mjs)
// so that the example runs without a key; yours names a real one, e.g. "gemini-2.5-flash".
import { BaseLlm, FunctionTool, LlmAgent, type LlmRequest, type LlmResponse } from "@google/adk";
import { forecast, nextParts, usage, weather } from "../../../scripted_weather.mjs";

class ScriptedWeatherModel extends BaseLlm {
  constructor() {
    super({ model: "scripted-weather" });
  }

  async *generateContentAsync(request: LlmRequest): AsyncGenerator<LlmResponse, void> {
    const instruction = request.config?.systemInstruction;
    const text = typeof instruction === "string" ? instruction : JSON.stringify(instruction ?? "");
    const parts = nextParts(text, request.contents, Object.keys(request.toolsDict), "agentName");
    yield { content: { role: "model", parts }, usageMetadata: usage(request.contents, parts),
      modelVersion: "scripted-weather-1" };
  }

  async connect(): Promise<never> {
    throw new Error("the scripted model has no live mode");
  }
}

const getWeather = new FunctionTool({
  name: "get_weather",
  description: "Current weather of a city, in the user's units (session state 'units').",
  parameters: { type: "OBJECT", properties: { city: { type: "STRING" } }, required: ["city"] },
  execute: ({ city }: { city: string }, context) => {
    context!.state.set("last_city", city);
    return weather(city, context!.state.get("units") ?? "celsius");
  },
});

const getForecast = new FunctionTool({
  name: "get_forecast",
  description: "A forecast of the next days for a city.",
  parameters: { type: "OBJECT", properties: { city: { type: "STRING" }, days: { type: "INTEGER" } },
    required: ["city", "days"] },
  execute: ({ city, days }: { city: string; days: number }) => forecast(city, days),
});

const forecastAgent = new LlmAgent({
  name: "forecast_agent",
  model: new ScriptedWeatherModel(),
  description: "Gives multi-day weather forecasts.",
  instruction: "You give forecasts. The user is {user_name}.",
  tools: [getForecast],
});

export const rootAgent = new LlmAgent({
  name: "weather_agent",
  model: new ScriptedWeatherModel(),
  description: "Answers questions about the weather.",
  instruction: "You answer weather questions. The user is {user_name}; use {units}.",
  tools: [getWeather],
  subAgents: [forecastAgent],
});
