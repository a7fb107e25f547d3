// TEST ONLY: a @google/adk agent whose tool reads and writes session state, to show that
// concurrent runs never see each other's sessions. Its model is scripted: it calls
// count_visit, then answers with what the tool saw.
import { BaseLlm, FunctionTool, LlmAgent } from "@google/adk";

class ScriptedVisitsModel extends BaseLlm {
  constructor() {
    super({ model: "scripted-visits" });
  }

  async *generateContentAsync(request) {
    const last = request.contents[request.contents.length - 1];
    const seen = (last.parts ?? []).find((p) => p.functionResponse)?.functionResponse.response;
    const parts = seen
      ? [{ text: `${seen.marker}: visit ${seen.visits}, ${seen.others} other markers seen` }]
      : [{ functionCall: { name: "count_visit", args: {} } }];
    yield { content: { role: "model", parts },
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 } };
  }

  async connect() {
    throw new Error("no live mode");
  }
}

const countVisit = new FunctionTool({
  name: "count_visit",
  description: "Counts this visit in the session state.",
  parameters: { type: "OBJECT", properties: {} },
  execute: async (_args, context) => {
    const visits = (context.state.get("visits") ?? 0) + 1;
    const markers = [...(context.state.get("markers") ?? []), context.state.get("marker")];
    context.state.set("visits", visits);
    context.state.set("markers", markers);
    // Let the other sessions' turns run in between.
    await new Promise((resolve) => setTimeout(resolve, 20 + Math.floor(Math.random() * 30)));
    return { marker: context.state.get("marker"), visits,
      others: new Set(markers.filter((m) => m !== context.state.get("marker"))).size };
  },
});

export const rootAgent = new LlmAgent({
  name: "visits_agent",
  model: new ScriptedVisitsModel(),
  description: "Counts visits.",
  instruction: "Count the visit.",
  tools: [countVisit],
});
