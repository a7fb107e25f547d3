// TEST ONLY: an @iqai/adk agent on Gemini ("gemini-2.5-flash" through @google/genai's real
// client; GOOGLE_GEMINI_BASE_URL: the fake Gemini API), for the refusal tests.
import { LlmAgent } from "@iqai/adk";

export const rootAgent = new LlmAgent({
  name: "desk",
  description: "Answers weather questions in one sentence.",
  model: "gemini-2.5-flash",
  instruction: "You answer weather questions in one sentence.",
});
