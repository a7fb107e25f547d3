// TEST ONLY: @iqai/adk agents that answer "NAME: TEXT" (a scripted model, no tools), for the
// tests of which exports evalcheck-adk-ts finds.
import { BaseLlm, LlmAgent, LlmResponse } from "@iqai/adk";

export class EchoModel extends BaseLlm {
  constructor(name) {
    super("echo");
    this.name = name;
  }

  async *generateContentAsyncImpl(request) {
    const last = request.contents[request.contents.length - 1];
    const text = (last.parts ?? []).map((p) => p.text ?? "").join("");
    if (text === "raise") throw new Error("the model failed on purpose");
    yield new LlmResponse({ content: { role: "model", parts: [{ text: `${this.name}: ${text}` }] } });
  }
}

export function echoAgent(name, subAgents = []) {
  return new LlmAgent({ name, description: "Echoes.", model: new EchoModel(name), subAgents });
}
