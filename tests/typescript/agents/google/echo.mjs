// TEST ONLY: @google/adk agents that answer "NAME: TEXT" (a scripted model, no tools), for
// the tests of which exports evalcheck-adk-ts finds.
import { BaseLlm, LlmAgent } from "@google/adk";

class EchoModel extends BaseLlm {
  constructor(name) {
    super({ model: "echo" });
    this.name = name;
  }

  async *generateContentAsync(request) {
    const last = request.contents[request.contents.length - 1];
    const text = (last.parts ?? []).map((p) => p.text ?? "").join("");
    yield { content: { role: "model", parts: [{ text: `${this.name}: ${text}` }] } };
  }

  async connect() {
    throw new Error("no live mode");
  }
}

export function echoAgent(name) {
  return new LlmAgent({ name, description: "Echoes.", model: new EchoModel(name) });
}
