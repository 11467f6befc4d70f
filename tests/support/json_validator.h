#pragma once
// The independent judge of generated JSON: scripts/validate-json-outputs.py (python3-jsonschema,
// Draft 2020-12), run on a schema and a list of outputs. In edgellm_test_env (no library
// internals), so the C ABI tests can use it beside the server's.
#include <string>
#include <vector>

namespace edgellm::test {

struct GeneratedOutput {
  std::string text;
  std::string finish_reason;  // "stop", "length", ...
};

struct JsonValidation {
  int exit_code = -1;  // 0 only when every output finished with "stop", parses and validates
  std::string report;  // the validator's report line (counts and failures)
};

// Writes `schema_json` and the outputs as JSON lines {"text", "finish_reason"} under temp_dir()
// and runs the validator from the repository root (the tests' working directory).
JsonValidation validate_json_outputs(const std::string& schema_json, const std::vector<GeneratedOutput>& outputs);

}  // namespace edgellm::test
