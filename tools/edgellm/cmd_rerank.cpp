// `edgellm rerank`: relevance scores of documents for a query with a cross-encoder (a GGUF with
// a classification head, pooling rank), best first.
//   edgellm rerank -m RERANKER.gguf -q QUERY (-d DOCUMENT ... | -f FILE) [--top-n N] [--json]
// -f: one document per line (--embd-separator changes that). Scores are the model's raw outputs
// (logits), as llama-server's /v1/rerank returns them; --json prints llama-server's
// {"results": [{"index", "relevance_score"}]} with the document text added.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "cli_args.h"
#include "command.h"
#include "core/error.h"
#include "core/json.h"
#include "embedding_cli.h"

namespace edgellm::cli {
namespace {

int run_rerank(const std::vector<std::string>& args) {
  std::string query, file, separator = "\\n";
  std::vector<std::string> documents;
  int32_t top_n = 0;
  bool json = false;
  EmbedderOptions eo;
  ArgParser ap("rerank", "-m RERANKER -q QUERY (-d DOC ... | -f FILE) [options]");
  ap.add_string("-q,--query", &query, "TEXT", "the query");
  ap.add_strings("-d,--document", &documents, "TEXT", "a document (repeatable)");
  ap.add_string("-f,--file", &file, "FILE", "documents, split at --embd-separator (default: one per line)");
  ap.add_string("--embd-separator", &separator, "SEP", "separator of the file's documents (default \\n)");
  ap.add_int("--top-n", &top_n, "N", "print the N best (default: all)", 0);
  ap.add_flag(shared_option("json"), &json, "llama-server's /v1/rerank result");
  add_embedder_options(ap, eo, "a cross-encoder (a classification head: cls.output)");
  if (!ap.parse(args)) return 0;
  require(!query.empty(), ErrorCode::kInvalidArgument, "-q QUERY is required\n" + ap.usage());
  if (!file.empty()) {
    for (std::string& d : split_texts(read_text_file(file), separator)) documents.push_back(std::move(d));
  }
  require(!documents.empty(), ErrorCode::kInvalidArgument, "no documents: give -d DOC or -f FILE\n" + ap.usage());

  const std::unique_ptr<Runtime> rt = open_embedding_runtime(eo);
  EmbeddingRequest r;
  r.task = EmbeddingTask::kRerank;
  r.query = query;
  r.documents = documents;
  r.truncation = parse_truncation(eo.truncate);
  const EmbeddingResult res = run_embedding_request(*rt, std::move(r));
  std::vector<size_t> order(documents.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return res.scores[a] > res.scores[b]; });
  if (top_n > 0 && static_cast<size_t>(top_n) < order.size()) order.resize(static_cast<size_t>(top_n));
  if (json) {
    Json results = Json::array();
    for (size_t i : order) {
      Json e = Json::object();
      e.set("index", static_cast<int64_t>(i));
      e.set("relevance_score", static_cast<double>(res.scores[i]));
      e.set("document", documents[i]);
      results.push_back(std::move(e));
    }
    Json out = Json::object();
    out.set("results", std::move(results));
    Json usage = Json::object();
    usage.set("prompt_tokens", res.prompt_tokens);
    usage.set("total_tokens", res.prompt_tokens);
    out.set("usage", std::move(usage));
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  for (size_t rank = 0; rank < order.size(); ++rank) {
    const size_t i = order[rank];
    std::printf("%zu. %8.3f  [%zu] %s\n", rank + 1, static_cast<double>(res.scores[i]), i, documents[i].c_str());
  }
  return 0;
}

const CommandRegistration kRerankRegistration("rerank", "score documents for a query with a cross-encoder, best first",
                                        run_rerank);

}  // namespace
}  // namespace edgellm::cli
