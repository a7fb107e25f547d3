// TEST ONLY: how @iqai/adk's own AgentEvaluator reads eval files, for the tests that set
// evalcheck's reading beside it. Prints one JSON object: file -> the EvalSet ADK-TS makes
// of it with its criteria (test_config.json beside it, else its defaults), or the error.
//   node tools/adk_ts_reads.mjs FILE...
import { AgentEvaluator } from "@iqai/adk";

const reads = {};
for (const file of process.argv.slice(2)) {
  try {
    const criteria = await AgentEvaluator.findConfigForTestFile(file);
    const evalSet = await AgentEvaluator._loadEvalSetFromFile(file, criteria, {});
    reads[file] = { criteria, evalSet };
  } catch (error) {
    reads[file] = { error: String(error.message ?? error) };
  }
}
process.stdout.write(`${JSON.stringify(reads)}\n`);
process.exit(0);
