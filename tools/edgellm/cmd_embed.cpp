// `edgellm embed`: embeddings of texts, with llama.cpp's llama-embedding flags and output.
//   edgellm embed -m MODEL.gguf (-p TEXT | -f FILE) [--embd-separator SEP] [--pooling none|mean|cls|last|rank]
//                 [--embd-normalize N] [--embd-output-format array|json|json+] [--cls-separator SEP]
//                 [-c N] [-b N] [-t N] [--truncate refuse|end]
// Texts: -p (repeatable) and the file's text, each split at --embd-separator (default "\n").
// Output: by default "embedding i: v0 v1 v2  ...  v(n-3) v(n-2) v(n-1)" per text (and with
// several texts the cosine similarity matrix); "array" a JSON array of arrays, "json" OpenAI's
// list object, "json+" that plus "cosineSimilarity"; "raw" one vector per line (every value,
// space separated: for scripts). --token-ids FILE embeds token id lines instead of texts (used
// as given) and --repeats N runs the request N times and prints "seconds S repeats N sequences
// K tokens T peak_rss_kib R" to stderr (scripts/embed-vs-llamacpp.sh). --pooling rank (a reranker): each text is
// "query<cls-separator>document" and the output "rerank score i: s". Runs through an embedding
// Runtime (the same path as the library's faces).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "cli_args.h"
#include "command.h"
#include "core/error.h"
#include "embedding_cli.h"
#include "engine/pooling.h"
#include "platform/memory_stats.h"

namespace edgellm::cli {
namespace {

double cosine(const float* a, const float* b, int32_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int32_t i = 0; i < n; ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

// At most `bytes` bytes of `text`, never part of a character (the similarity matrix's labels).
std::string label(const std::string& text, size_t bytes) {
  size_t end = std::min(bytes, text.size());
  while (end > 0 && end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

void print_value(float v, int normalize) {
  std::printf(normalize == 0 ? "%1.0f" : "%1.7f", static_cast<double>(v));
}

int run_embed(const std::vector<std::string>& args) {
  std::string file, separator = "\\n", cls_separator = "\\t", pooling_name, format, ids_file;
  int32_t repeats = 0;
  std::vector<std::string> prompts;
  int32_t normalize = 2;
  EmbedderOptions eo;
  ArgParser ap("embed", "-m MODEL (-p TEXT | -f FILE) [options]");
  ap.add_strings("-p,--prompt", &prompts, "TEXT", "text(s) to embed (repeatable; split at --embd-separator)");
  ap.add_string("-f,--file", &file, "FILE", "texts to embed, split at --embd-separator");
  ap.add_string("--embd-separator", &separator, "SEP", "separator of the texts (default \\n)");
  ap.add_string(shared_option("pooling"), &pooling_name, "default: the model's");
  ap.add_int("--embd-normalize", &normalize, "N",
             "-1 none, 0 max absolute to int16, 1 taxicab, 2 euclidean (default), >2 p-norm", -1, 64);
  ap.add_string("--embd-output-format", &format, "FMT", "empty (text), array, json, json+ or raw");
  ap.add_string("--token-ids", &ids_file, "FILE", "embed token id sequences (one per line) instead of texts");
  ap.add_int("--repeats", &repeats, "N", "run the request N times and print the time to stderr (benchmarks)", 0);
  ap.add_string("--cls-separator", &cls_separator, "SEP",
                "between query and document with --pooling rank (default \\t)");
  add_embedder_options(ap, eo, "an embedding model: bert, or a decoder such as Qwen3-Embedding");
  if (!ap.parse(args)) return 0;
  require(format.empty() || format == "array" || format == "json" || format == "json+" || format == "raw",
          ErrorCode::kInvalidArgument, "--embd-output-format '" + format + "' is not one of array, json, json+, raw");
  PoolingType pooling = PoolingType::kUnspecified;
  if (!pooling_name.empty()) {
    const auto p = pooling_type_from_name(pooling_name);
    require(p.has_value(), ErrorCode::kInvalidArgument,
            "--pooling '" + pooling_name + "' is not one of none, mean, cls, last, rank");
    pooling = *p;
  }
  std::vector<std::string> texts;
  for (const std::string& p : prompts) {
    for (std::string& t : split_texts(p, separator)) texts.push_back(std::move(t));
  }
  if (!file.empty()) {
    for (std::string& t : split_texts(read_text_file(file), separator)) texts.push_back(std::move(t));
  }
  std::vector<std::vector<int32_t>> token_inputs;
  if (!ids_file.empty()) {
    std::istringstream lines(read_text_file(ids_file));
    for (std::string line; std::getline(lines, line);) {
      std::istringstream ids(line);
      std::vector<int32_t> seq;
      for (int64_t id; ids >> id;) seq.push_back(static_cast<int32_t>(id));
      if (!seq.empty()) token_inputs.push_back(std::move(seq));
    }
  }
  require(!texts.empty() || !token_inputs.empty(), ErrorCode::kInvalidArgument,
          "nothing to embed: give -p TEXT, -f FILE or --token-ids FILE\n" + ap.usage());

  const std::unique_ptr<Runtime> rt = open_embedding_runtime(eo);
  const Truncation truncation = parse_truncation(eo.truncate);
  const std::shared_ptr<EmbeddingService> svc = rt->embedding_service();
  if (pooling == PoolingType::kUnspecified) pooling = svc->default_pooling();

  if (pooling == PoolingType::kRank) {
    // Each text is "query<SEP>document": one rerank request per text, submitted together.
    const std::string sep = unescape_separator(cls_separator);
    std::vector<float> scores;
    for (const std::string& t : texts) {
      const size_t at = t.find(sep);
      require(at != std::string::npos, ErrorCode::kInvalidArgument,
              "--pooling rank: '" + t.substr(0, 40) + "' has no query / document separator (--cls-separator)");
      EmbeddingRequest r;
      r.task = EmbeddingTask::kRerank;
      r.query = t.substr(0, at);
      r.documents = {t.substr(at + sep.size())};
      r.truncation = truncation;
      scores.push_back(run_embedding_request(*rt, std::move(r)).scores.at(0));
    }
    if (format.empty()) {
      for (size_t i = 0; i < scores.size(); ++i)
        std::printf("rerank score %zu: %8.3f\n", i, static_cast<double>(scores[i]));
    } else {
      std::printf("[");
      for (size_t i = 0; i < scores.size(); ++i) std::printf("%s%1.7f", i ? "," : "", static_cast<double>(scores[i]));
      std::printf("]\n");
    }
    return 0;
  }

  EmbeddingRequest r;
  r.texts = texts;
  r.token_inputs = token_inputs;
  r.pooling = pooling;
  r.normalize = normalize;
  r.truncation = truncation;
  EmbeddingResult res;
  if (repeats > 0) {
    double seconds = 0;
    for (int32_t i = 0; i < repeats; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      res = run_embedding_request(*rt, r);
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    std::fprintf(stderr, "seconds %.6f repeats %d sequences %zu tokens %lld peak_rss_kib %zu\n", seconds, repeats,
                 res.input_tokens.size(), static_cast<long long>(res.prompt_tokens),
                 read_process_memory().peak_bytes >> 10);
  } else {
    res = run_embedding_request(*rt, std::move(r));
  }
  const int32_t n = res.dims;
  const size_t rows = res.vectors.size() / static_cast<size_t>(n);
  const float* v = res.vectors.data();
  if (format == "raw") {
    for (size_t j = 0; j < rows; ++j) {
      for (int32_t i = 0; i < n; ++i) std::printf(i ? " %.9g" : "%.9g", static_cast<double>(v[j * n + i]));
      std::printf("\n");
    }
    return 0;
  }
  if (format.empty()) {
    for (size_t j = 0; j < rows; ++j) {
      std::printf("embedding %zu: ", j);
      for (int32_t i = 0; i < std::min(3, n); ++i)
        std::printf(normalize == 0 ? "%6.0f " : "%9.6f ", static_cast<double>(v[j * n + i]));
      std::printf(" ... ");
      for (int32_t i = std::max(0, n - 3); i < n; ++i)
        std::printf(normalize == 0 ? "%6.0f " : "%9.6f ", static_cast<double>(v[j * n + i]));
      std::printf("\n");
    }
    if (rows > 1 && pooling != PoolingType::kNone && rows == texts.size()) {
      std::printf("\ncosine similarity matrix:\n\n");
      for (size_t i = 0; i < rows; ++i) std::printf("%6s ", label(texts[i], 6).c_str());
      std::printf("\n");
      for (size_t i = 0; i < rows; ++i) {
        for (size_t j = 0; j < rows; ++j) std::printf("%6.2f ", cosine(v + i * n, v + j * n, n));
        std::printf("%s\n", label(texts[i], 10).c_str());
      }
    }
    return 0;
  }
  const bool object = format != "array";
  std::printf(object ? "{\n  \"object\": \"list\",\n  \"data\": [\n" : "[");
  for (size_t j = 0; j < rows; ++j) {
    if (object) std::printf("    {\n      \"object\": \"embedding\",\n      \"index\": %zu,\n      \"embedding\": ", j);
    std::printf("[");
    for (int32_t i = 0; i < n; ++i) {
      if (i) std::printf(",");
      print_value(v[j * n + i], normalize);
    }
    std::printf(object ? "]\n    }" : "]");
    if (j + 1 < rows) std::printf(object ? ",\n" : ",");
  }
  std::printf(object ? "\n  ]" : "]\n");
  if (format == "json+" && rows > 1) {
    std::printf(",\n  \"cosineSimilarity\": [\n");
    for (size_t i = 0; i < rows; ++i) {
      std::printf("    [");
      for (size_t j = 0; j < rows; ++j) std::printf("%s%6.2f", j ? ", " : "", cosine(v + i * n, v + j * n, n));
      std::printf(" ]%s", i + 1 < rows ? ",\n" : "");
    }
    std::printf("\n  ]");
  }
  if (object) {
    std::printf(",\n  \"usage\": {\"prompt_tokens\": %lld, \"total_tokens\": %lld}\n}\n",
                static_cast<long long>(res.prompt_tokens), static_cast<long long>(res.prompt_tokens));
  }
  return 0;
}

const CommandRegistration kEmbedRegistration("embed",
                                        "embeddings of texts (llama-embedding's flags): pooling, normalisation, JSON",
                                        run_embed);

}  // namespace
}  // namespace edgellm::cli
