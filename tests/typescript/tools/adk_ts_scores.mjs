// TEST ONLY: scores of @iqai/adk's own evaluators, for the tests that check
// docs/adk-typescript.md's table against the real package. Reads one JSON object on stdin:
//   {"rouge": [[response, reference], ...], "trajectory": [[actualCalls, expectedCalls], ...],
//    "finalResponseMatchV2": [[response, reference], ...], "safety": [response, ...]}
// and prints the scores in the same shape (NaN and errors as strings).
import { FinalResponseMatchV2Evaluator, RougeEvaluator, SafetyEvaluatorV1, TrajectoryEvaluator } from "@iqai/adk";

const text = (t) => ({ role: "model", parts: [{ text: t }] });
const invocation = (finalText, toolUses = []) => ({
  invocationId: "inv", userContent: { role: "user", parts: [{ text: "question" }] },
  finalResponse: text(finalText), intermediateData: { toolUses, intermediateResponses: [] },
  creationTimestamp: 0,
});
const shown = (value) => (typeof value === "number" && Number.isNaN(value) ? "NaN" : value);

async function scores(evaluator, pairs, toInvocations) {
  const out = [];
  for (const pair of pairs) {
    try {
      const [actual, expected] = toInvocations(pair);
      out.push(shown((await evaluator.evaluateInvocations([actual], [expected])).overallScore));
    } catch (error) {
      out.push(`error: ${error.message}`);
    }
  }
  return out;
}

let input = "";
for await (const chunk of process.stdin) input += chunk;
const asked = JSON.parse(input);
const metric = (metricName) => ({ metricName, threshold: 0.5 });
const result = {
  rouge: await scores(new RougeEvaluator(metric("response_match_score")), asked.rouge ?? [],
    ([response, reference]) => [invocation(response), invocation(reference)]),
  trajectory: await scores(new TrajectoryEvaluator(metric("tool_trajectory_avg_score")), asked.trajectory ?? [],
    ([actual, expected]) => [invocation("", actual), invocation("", expected)]),
  finalResponseMatchV2: await scores(new FinalResponseMatchV2Evaluator(metric("final_response_match_v2")),
    asked.finalResponseMatchV2 ?? [], ([response, reference]) => [invocation(response), invocation(reference)]),
  safety: await scores(new SafetyEvaluatorV1(metric("safety_v1")), (asked.safety ?? []).map((r) => [r]),
    ([response]) => [invocation(response), invocation(response)]),
};
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
