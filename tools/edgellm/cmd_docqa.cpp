// `edgellm docqa`: document Q&A on the device (docqa/doc_qa.h, docs/docqa.md).
//   index DIR  -m EMBEDDER [--index FILE] [--chunk-tokens N] [--overlap N] [--vectors int8|f16] [--rebuild]
//              every .txt / .md / .markdown file under DIR: new ones added, changed ones re-chunked
//              and re-embedded, vanished ones removed, unchanged ones left alone; one atomic save
//   search QUESTION  -m EMBEDDER [--index FILE] [--rerank-model FILE] [--top-k N] [--candidates N]
//              the chunks nearest to the question (cosine; with a reranker, reordered by it)
//   ask QUESTION  -m EMBEDDER --gen-model FILE [--gen-ctx N] [-n N] [search's options]
//              search, then an answer from the generator (its chat template) citing the chunks
//   list [--index FILE]   the indexed documents (reads the index file only: no model)
// -m is the embedding model for every subcommand that takes one (the index records which model
// built it and refuses another); --json prints the report / hits / answer as JSON.
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli_args.h"
#include "command.h"
#include "core/error.h"
#include "core/json.h"
#include "docqa/doc_qa.h"
#include "docqa/index_file.h"
#include "embedding_cli.h"
#include "generation_options.h"

namespace edgellm::cli {
namespace {

constexpr const char* kDefaultIndex = "docqa.index";

Json chunk_json(const RetrievedChunk& c) {
  Json j = Json::object();
  j.set("chunk", static_cast<int64_t>(c.chunk));
  j.set("path", c.path);
  j.set("begin", static_cast<int64_t>(c.begin));
  j.set("end", static_cast<int64_t>(c.end));
  j.set("score", static_cast<double>(c.score));
  if (c.rerank_score) j.set("rerank_score", static_cast<double>(*c.rerank_score));
  j.set("text", c.text);
  return j;
}

// One line of a chunk's text for the terminal: line ends as spaces, at most ~160 bytes (cut at
// a UTF-8 boundary).
std::string preview(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (out.size() >= 160 && (c & 0xC0) != 0x80) {
      out += "...";
      break;
    }
    out.push_back(c == '\n' || c == '\r' || c == '\t' ? ' ' : text[i]);
  }
  return out;
}

void print_hits(const std::vector<RetrievedChunk>& hits) {
  for (size_t i = 0; i < hits.size(); ++i) {
    const RetrievedChunk& c = hits[i];
    std::printf("%zu. %.4f", i + 1, static_cast<double>(c.score));
    if (c.rerank_score) std::printf(" (rerank %.3f)", static_cast<double>(*c.rerank_score));
    std::printf("  [%" PRIu32 "] %s:%" PRIu32 "-%" PRIu32 "\n   %s\n", c.chunk, c.path.c_str(), c.begin, c.end,
                preview(c.text).c_str());
  }
}

int run_list(const std::string& index_path, bool json) {
  const IndexFile f = load_index_file(index_path);
  const VectorIndex& ix = *f.index;
  if (json) {
    Json docs = Json::array();
    for (const IndexedDocument* d : ix.documents()) {
      Json e = Json::object();
      e.set("path", d->path);
      e.set("bytes", static_cast<int64_t>(d->bytes));
      e.set("chunks", static_cast<int64_t>(d->chunks.size()));
      e.set("sha256", d->sha256);
      docs.push_back(std::move(e));
    }
    Json out = Json::object();
    out.set("model", ix.model_id());
    out.set("vectors", vector_type_name(ix.type()));
    out.set("dims", static_cast<int64_t>(ix.dims()));
    // The writer's JSON; a file from elsewhere may hold any text there (it is informative).
    try {
      out.set("settings", Json::parse(f.settings));
    } catch (const Error&) {
      out.set("settings", f.settings);
    }
    out.set("documents", std::move(docs));
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%s: %zu documents, %zu chunks, %s vectors of %d dims, ~%.1f MiB in memory\nmodel: %s\n",
              index_path.c_str(), ix.document_count(), ix.chunk_count(), vector_type_name(ix.type()), ix.dims(),
              static_cast<double>(ix.memory_bytes()) / (1 << 20), ix.model_id().c_str());
  for (const IndexedDocument* d : ix.documents()) {
    std::printf("  %-40s %10" PRIu64 " bytes %6zu chunks\n", d->path.c_str(), d->bytes, d->chunks.size());
  }
  return 0;
}

int run_docqa(const std::vector<std::string>& args) {
  std::vector<std::string> pos;
  std::string index_path = kDefaultIndex, vectors = "int8", gen_model, rerank_model;
  int32_t gen_ctx = 0;
  bool json = false;
  DocQaOptions o;
  EmbedderOptions eo;
  ArgParser ap("docqa", "index DIR | search QUESTION | ask QUESTION | list  [options]");
  ap.allow_positionals(&pos, "SUBCOMMAND ARG");
  add_embedder_options(ap, eo, "the embedding model (index, search, ask)");
  ap.add_string("--index", &index_path, "FILE", std::string("the index file (default ") + kDefaultIndex + ")");
  ap.add_int("--chunk-tokens", &o.chunk.max_tokens, "N",
             "index: tokens per chunk (default 0: min(256, the embedder's context - 2))", 0, 1 << 16);
  ap.add_int("--overlap", &o.chunk.overlap_tokens, "N",
             "index: tokens a chunk repeats of the previous one (default 32)", 0, 1 << 15);
  ap.add_string("--vectors", &vectors, "TYPE", "index: int8 (default) or f16, for a new index");
  ap.add_flag("--rebuild", &o.rebuild, "index: start from an empty index (e.g. after a corrupt file)");
  ap.add_string("--query-prefix", &o.query_prefix, "TEXT", "put before a question when it is embedded");
  ap.add_int("--top-k", &o.top_k, "N", "search / ask: chunks returned / given to the generator (default 4)", 1, 256);
  ap.add_int("--candidates", &o.candidates, "N", "search / ask: chunks the reranker reorders (default 16)", 1, 4096);
  ap.add_string("--rerank-model", &rerank_model, "FILE", "search / ask: a cross-encoder that reorders the hits");
  ap.add_string("--gen-model", &gen_model, "FILE", "ask: the model that writes the answer");
  ap.add_int("--gen-ctx", &gen_ctx, "N", "ask: the generator's context (default 0: the model's, at most 4096)", 0,
             1 << 20);
  ap.add_int("-n,--max-tokens", &o.max_answer_tokens, "N", "ask: longest answer (default 256)", 1, 1 << 16);
  ap.add_flag(shared_option("json"), &json, "the report, hits or answer");
  if (!ap.parse(args)) return 0;
  require(!pos.empty(), ErrorCode::kInvalidArgument, "docqa needs a subcommand\n" + ap.usage());
  const std::string sub = pos[0];
  const bool known = sub == "index" || sub == "search" || sub == "ask" || sub == "list";
  require(known, ErrorCode::kInvalidArgument, "unknown docqa subcommand '" + sub + "'\n" + ap.usage());
  require(pos.size() == (sub == "list" ? 1u : 2u), ErrorCode::kInvalidArgument,
          sub == "list" ? "docqa list takes no argument\n" + ap.usage()
                        : "docqa " + sub + " takes one argument (" + (sub == "index" ? "DIR" : "QUESTION") +
                              "; quote a question)\n" + ap.usage());
  if (sub == "list") {
    require(eo.model.model.empty() && eo.model.registry.empty(), ErrorCode::kInvalidArgument,
            "docqa list reads the index file only: -m does not apply");
    return run_list(index_path, json);
  }
  require(sub == "ask" || gen_model.empty(), ErrorCode::kInvalidArgument, "--gen-model is for docqa ask");
  require(sub != "index" || rerank_model.empty(), ErrorCode::kInvalidArgument, "--rerank-model is for search / ask");
  o.vector_type = vector_type_from_name(vectors);
  // docqa cuts by default (a chunk is sized to fit; a long question keeps its start).
  if (ap.seen("--truncate")) o.truncation = parse_truncation(eo.truncate);
  if (o.candidates < o.top_k) o.candidates = o.top_k;

  const std::unique_ptr<Runtime> embedder = open_embedding_runtime(eo);
  DocQa qa(*embedder, index_path, o);

  if (sub == "index") {
    const IndexReport r = qa.index_directory(pos[1]);
    const VectorIndex& ix = qa.index();
    for (const std::string& note : r.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
    if (json) {
      Json out = Json::object();
      out.set("index", index_path);
      out.set("added", r.added);
      out.set("updated", r.updated);
      out.set("removed", r.removed);
      out.set("unchanged", r.unchanged);
      out.set("skipped", r.skipped);
      out.set("chunks_added", r.chunks_added);
      out.set("chunks_removed", r.chunks_removed);
      out.set("tokens_embedded", r.tokens_embedded);
      out.set("seconds", r.seconds);
      out.set("documents", static_cast<int64_t>(ix.document_count()));
      out.set("chunks", static_cast<int64_t>(ix.chunk_count()));
      out.set("memory_bytes", static_cast<int64_t>(ix.memory_bytes()));
      std::printf("%s\n", out.dump(2).c_str());
    } else {
      std::printf(
          "%s: %d added, %d updated, %d removed, %d unchanged, %d skipped; chunks +%" PRId64 " -%" PRId64 ", %" PRId64
          " tokens embedded in %.2f s\nindex: %zu documents, %zu chunks (%d tokens each at most, "
          "overlap %d), ~%.1f MiB in memory\n",
          index_path.c_str(), r.added, r.updated, r.removed, r.unchanged, r.skipped, r.chunks_added, r.chunks_removed,
          r.tokens_embedded, r.seconds, ix.document_count(), ix.chunk_count(), qa.options().chunk.max_tokens,
          qa.options().chunk.overlap_tokens, static_cast<double>(ix.memory_bytes()) / (1 << 20));
    }
    return 0;
  }

  std::unique_ptr<Runtime> reranker;
  if (!rerank_model.empty()) {
    EmbedderOptions ro = eo;
    ro.model = {rerank_model, ""};
    reranker = open_embedding_runtime(ro);
  }
  if (sub == "search") {
    RetrieveTiming t;
    const std::vector<RetrievedChunk> hits = qa.retrieve(pos[1], reranker.get(), &t);
    if (json) {
      Json list = Json::array();
      for (const RetrievedChunk& c : hits) list.push_back(chunk_json(c));
      Json out = Json::object();
      out.set("hits", std::move(list));
      out.set("chunks_searched", static_cast<int64_t>(qa.index().chunk_count()));
      out.set("embed_ms", t.embed_ms);
      out.set("search_ms", t.search_ms);
      out.set("rerank_ms", t.rerank_ms);
      std::printf("%s\n", out.dump(2).c_str());
    } else {
      print_hits(hits);
      std::fprintf(stderr, "%zu chunks searched: question embedded in %.1f ms, scanned in %.2f ms%s\n",
                   qa.index().chunk_count(), t.embed_ms, t.search_ms,
                   reranker ? (", reranked in " + std::to_string(t.rerank_ms) + " ms").c_str() : "");
    }
    return 0;
  }

  require(!gen_model.empty(), ErrorCode::kInvalidArgument, "docqa ask needs --gen-model FILE (the answer's model)");
  RuntimeParams gp;
  gp.model_path = gen_model;
  gp.service.context.n_ctx = gen_ctx;
  gp.service.context.n_seq_max = 1;
  gp.service.context.n_threads = eo.threads;
  gp.max_sessions = 0;
  Runtime generator(gp);
  const DocAnswer a = qa.ask(pos[1], generator, reranker.get());
  if (json) {
    Json out = Json::object();
    out.set("answer", a.answer);
    out.set("finish_reason", finish_reason_name(a.finish_reason));
    if (!a.error.empty()) out.set("error", a.error);
    Json cites = Json::array();
    for (const Citation& c : a.citations) {
      Json e = Json::object();
      e.set("chunk", static_cast<int64_t>(c.chunk));
      e.set("path", c.path);
      e.set("begin", static_cast<int64_t>(c.begin));
      e.set("end", static_cast<int64_t>(c.end));
      cites.push_back(std::move(e));
    }
    out.set("citations", std::move(cites));
    Json context = Json::array();
    for (const RetrievedChunk& c : a.context) context.push_back(chunk_json(c));
    out.set("context", std::move(context));
    out.set("retrieve_ms", a.retrieve_ms);
    out.set("generate_ms", a.generate_ms);
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("%s\n\n", a.answer.c_str());
    std::printf("sources%s:\n", a.citations.empty() ? " given (the answer cites none)" : " cited");
    if (a.citations.empty()) {
      for (const RetrievedChunk& c : a.context) {
        std::printf("  [%" PRIu32 "] %s:%" PRIu32 "-%" PRIu32 "\n", c.chunk, c.path.c_str(), c.begin, c.end);
      }
    } else {
      for (const Citation& c : a.citations) {
        std::printf("  [%" PRIu32 "] %s:%" PRIu32 "-%" PRIu32 "\n", c.chunk, c.path.c_str(), c.begin, c.end);
      }
    }
  }
  if (a.finish_reason == FinishReason::kError) throw Error(ErrorCode::kInternal, "the answer failed: " + a.error);
  return 0;
}

const CommandRegistration kDocqaRegistration("docqa", "document Q&A: index a folder, search it, ask it (with citations)",
                                        run_docqa);

}  // namespace
}  // namespace edgellm::cli
