// An @iqai/adk (ADK-TS) agent, evaluated as it is through evalcheck's adapter
// (docs/adk-typescript.md):
//
//   evalcheck run evals --agent-command "evalcheck-adk-ts agent.ts"
//
// An LlmAgent with a tool that reads and writes session state, and a sub-agent reached by
// transfer_to_agent; the adapter finds it as the `rootAgent` export. Its model is scripted
// (offline, deterministic: ../scripted_weather.mjs) so that the example runs without a key;
// yours names a real one, e.g. "gemini-2.5-flash".
import { BaseLlm, FunctionTool, LlmAgent, LlmResponse, type LlmRequest, type ToolContext } from "@iqai/adk";
import { forecast, nextParts, usage, weather } from "../scripted_weather.mjs";

class ScriptedWeatherModel extends BaseLlm {
  constructor() {
    super("scripted-weather");
  }

  protected async *generateContentAsyncImpl(request: LlmRequest): AsyncGenerator<LlmResponse, void, unknown> {
    const parts = nextParts(request.getSystemInstructionText() ?? "", request.contents,
      Object.keys(request.toolsDict), "agent_name");
    yield new LlmResponse({ content: { role: "model", parts }, usageMetadata: usage(request.contents, parts) });
  }
}

function getWeather(city: string, toolContext: ToolContext) {
  toolContext.state.last_city = city;
  return weather(city, toolContext.state.units ?? "celsius");
}

function getForecast(city: string, days: number) {
  return forecast(city, days);
}

const forecastAgent = new LlmAgent({
  name: "forecast_agent",
  model: new ScriptedWeatherModel(),
  description: "Gives multi-day weather forecasts.",
  instruction: "You give forecasts. The user is {user_name}.",
  tools: [new FunctionTool(getForecast, { name: "get_forecast",
    description: "A forecast of the next days for a city.",
    parameterTypes: { city: "string", days: "number" } })],
});

export const rootAgent = new LlmAgent({
  name: "weather_agent",
  model: new ScriptedWeatherModel(),
  description: "Answers questions about the weather.",
  instruction: "You answer weather questions. The user is {user_name}; use {units}.",
  tools: [new FunctionTool(getWeather, { name: "get_weather",
    description: "Current weather of a city, in the user's units (session state 'units').",
    parameterTypes: { city: "string" } })],
  subAgents: [forecastAgent],
});
