// TEST ONLY: an @iqai/adk agent whose tool reads and writes session state, to show that
// concurrent runs in one adapter process never see each other's sessions. Its model is
// scripted: it calls count_visit, then answers with what the tool saw.
import { BaseLlm, FunctionTool, LlmAgent, LlmResponse } from "@iqai/adk";

class ScriptedVisitsModel extends BaseLlm {
  constructor() {
    super("scripted-visits");
  }

  async *generateContentAsyncImpl(request) {
    const last = request.contents[request.contents.length - 1];
    const seen = (last.parts ?? []).find((p) => p.functionResponse)?.functionResponse.response;
    const parts = seen
      ? [{ text: `${seen.marker}: visit ${seen.visits}, ${seen.others} other markers seen` }]
      : [{ functionCall: { name: "count_visit", args: {} } }];
    yield new LlmResponse({ content: { role: "model", parts },
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 } });
  }
}

async function countVisit(toolContext) {
  const state = toolContext.state;
  const visits = (state.visits ?? 0) + 1;
  const markers = [...(state.markers ?? []), state.marker];
  state.visits = visits;
  state.markers = markers;
  // Let the other sessions' turns run in between.
  await new Promise((resolve) => setTimeout(resolve, 20 + Math.floor(Math.random() * 30)));
  return { marker: state.marker, visits, pid: process.pid,
    others: new Set(markers.filter((m) => m !== state.marker)).size };
}

export const rootAgent = new LlmAgent({
  name: "visits_agent",
  model: new ScriptedVisitsModel(),
  description: "Counts visits.",
  instruction: "Count the visit.",
  tools: [new FunctionTool(countVisit, { name: "count_visit", description: "Counts this visit." })],
});
