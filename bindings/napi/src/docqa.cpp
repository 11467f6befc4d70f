// Document Q&A in JS (edgellm.h, "document Q&A"): openDocQA({embedder, reranker?, generator?,
// indexPath, ...}) -> Promise<DocQA>; a DocQA's add / remove / indexFolder / search / ask / list
// return Promises whose C calls (edgellm_docqa_*) block on libuv workers, never on the JS thread.
//
// Ownership: a DocqaCore holds the edgellm_docqa handle and a shared_ptr to each Model's core; a
// call holds the DocqaCore (so the handle outlives it) and a Use of every model's runtime (so a
// release() waits for the call; a model released before the call makes it reject SHUT_DOWN
// without touching the handle). The handle never touches a runtime when destroyed, so the last
// reference may go after the models were released. Everything shared is copied and dropped on
// the JS thread; nothing calls into JS from a worker.
#include "docqa.h"

#include <memory>
#include <string>
#include <vector>

#include "addon.h"
#include "async_call.h"
#include "js.h"
#include "native_class.h"

namespace edgellm_napi {

namespace {

struct DocqaCore {
  edgellm_docqa* qa = nullptr;
  std::shared_ptr<ModelCore> models[3];        // embedder, reranker, generator (the last two may be empty)
  bool closed = false;                         // close(): later calls reject (JS thread)
  ~DocqaCore() { edgellm_docqa_destroy(qa); }  // no call in flight holds it any more
};

struct DocqaHandle {
  std::shared_ptr<DocqaCore> core;
};

const char* const kVectors[] = {"int8", "f16", nullptr};             // edgellm_docqa_vectors order
const char* const kDocqaTruncations[] = {"refuse", "end", nullptr};  // edgellm_truncation order

// Worker-thread holds of every model's runtime (a release waits for them), dropped after the work.
struct Holds {
  std::vector<ModelCore::Use> uses;
  edgellm_runtime* runtime[3] = {nullptr, nullptr, nullptr};
};

// JS thread: a Use of each model; false when one was released (the call then rejects).
bool take_holds(const std::shared_ptr<ModelCore> (&models)[3], Holds* h) {
  for (int i = 0; i < 3; ++i) {
    if (!models[i]) continue;
    ModelCore::Use u = models[i]->use();
    if (!u.runtime()) return false;
    h->runtime[i] = u.runtime();
    h->uses.push_back(std::move(u));
  }
  return true;
}

napi_value hit_object(napi_env env, const edgellm_docqa_hit* e) {
  napi_value o = js_object(env);
  if (!o || !set_property(env, o, "chunk", js_number(env, e->chunk)) ||
      !set_property(env, o, "key", js_string(env, e->key)) ||
      !set_property(env, o, "begin", js_number(env, e->begin)) ||
      !set_property(env, o, "end", js_number(env, e->end)) || !set_property(env, o, "text", js_string(env, e->text)) ||
      !set_property(env, o, "score", js_number(env, e->score)) ||
      (e->has_rerank_score && !set_property(env, o, "rerankScore", js_number(env, e->rerank_score)))) {
    return nullptr;
  }
  return o;
}

napi_value hits_array(napi_env env, const edgellm_docqa_result* r) {
  napi_value arr = nullptr;
  if (napi_create_array_with_length(env, r->n_hits, &arr) != napi_ok) return nullptr;
  for (size_t i = 0; i < r->n_hits; ++i) {
    napi_value h = hit_object(env, edgellm_docqa_result_hit(r, i));
    if (!h || napi_set_element(env, arr, static_cast<uint32_t>(i), h) != napi_ok) return nullptr;
  }
  return arr;
}

napi_value timings(napi_env env, const edgellm_docqa_result* r) {
  napi_value o = js_object(env);
  if (!o || !set_property(env, o, "embedMs", js_number(env, r->embed_ms)) ||
      !set_property(env, o, "searchMs", js_number(env, r->search_ms)) ||
      !set_property(env, o, "rerankMs", js_number(env, r->rerank_ms)) ||
      !set_property(env, o, "generateMs", js_number(env, r->generate_ms))) {
    return nullptr;
  }
  return o;
}

napi_value report_object(napi_env env, const edgellm_docqa_report& r) {
  napi_value o = js_object(env);
  if (!o || !set_property(env, o, "added", js_number(env, r.added)) ||
      !set_property(env, o, "updated", js_number(env, r.updated)) ||
      !set_property(env, o, "removed", js_number(env, r.removed)) ||
      !set_property(env, o, "unchanged", js_number(env, r.unchanged)) ||
      !set_property(env, o, "skipped", js_number(env, r.skipped)) ||
      !set_property(env, o, "chunksAdded", js_number(env, static_cast<double>(r.chunks_added))) ||
      !set_property(env, o, "chunksRemoved", js_number(env, static_cast<double>(r.chunks_removed))) ||
      !set_property(env, o, "tokensEmbedded", js_number(env, static_cast<double>(r.tokens_embedded))) ||
      !set_property(env, o, "documents", js_number(env, static_cast<double>(r.documents))) ||
      !set_property(env, o, "chunks", js_number(env, static_cast<double>(r.chunks))) ||
      !set_property(env, o, "memoryBytes", js_number(env, static_cast<double>(r.memory_bytes))) ||
      !set_property(env, o, "seconds", js_number(env, r.seconds))) {
    return nullptr;
  }
  return o;
}

// A string argument without NUL (the C ABI takes NUL-terminated text); false with *error set.
bool string_arg(napi_env env, napi_value v, const char* what, std::string* out, std::string* error) {
  if (!read_string(env, v, out)) {
    *error = std::string(what) + " must be a string";
    return false;
  }
  if (out->find('\0') != std::string::npos) {
    *error = std::string(what) + " contains a NUL character";
    return false;
  }
  return true;
}

// this -> its DocqaCore (exception pending and nullptr when `this` is no DocQA).
std::shared_ptr<DocqaCore> unpack(napi_env env, napi_callback_info info, napi_value* args, size_t n) {
  napi_value self = nullptr;
  size_t argc = n;
  if (napi_get_cb_info(env, info, &argc, args, &self, nullptr) != napi_ok) {
    throw_napi_failure(env, "napi_get_cb_info");
    return nullptr;
  }
  for (size_t i = argc; i < n; ++i) args[i] = js_undefined(env);
  void* p = nullptr;
  if (napi_unwrap(env, self, &p) != napi_ok || !p) {
    throw_error(env, "INVALID_ARGUMENT", "not a DocQA object");
    return nullptr;
  }
  const std::shared_ptr<DocqaCore>& core = static_cast<DocqaHandle*>(p)->core;
  if (core) return core;
  auto closed = std::make_shared<DocqaCore>();  // after close(): a stand-in every call rejects
  closed->closed = true;
  return closed;
}

using DocqaWork = std::function<edgellm_status(edgellm_docqa* qa)>;

// The call on a worker with every model held; `resolve` builds the value on the JS thread.
napi_value docqa_call(napi_env env, const char* name, const std::shared_ptr<DocqaCore>& core, DocqaWork work,
                      AsyncResolve resolve) {
  if (core->closed) return rejected_promise(env, "INVALID_ARGUMENT", "this DocQA was closed");
  auto holds = std::make_shared<Holds>();
  if (!take_holds(core->models, holds.get())) {
    return rejected_promise(env, status_code(EDGELLM_ERR_SHUT_DOWN), "a model of this DocQA was released");
  }
  // The core rides in the work (dropped on the JS thread with the call); the holds go on the worker.
  return run_async(
      env, name, nullptr,
      [core, holds, work = std::move(work)](edgellm_runtime*, std::string* error) {
        const edgellm_status st = work(core->qa);
        if (st != EDGELLM_OK) *error = last_error_message(st);
        holds->uses.clear();  // a release() waiting for this call may go on now
        return st;
      },
      std::move(resolve));
}

napi_value m_add(napi_env env, napi_callback_info info) {
  napi_value args[2];
  std::shared_ptr<DocqaCore> core = unpack(env, info, args, 2);
  if (!core) return nullptr;
  std::string key, text, error;
  if (!string_arg(env, args[0], "key", &key, &error) || !string_arg(env, args[1], "text", &text, &error)) {
    return rejected_promise(env, "INVALID_ARGUMENT", error);
  }
  auto rep = std::make_shared<edgellm_docqa_report>(edgellm_docqa_report_init());
  return docqa_call(
      env, "edgellm.DocQA.add", core,
      [key, text, rep](edgellm_docqa* qa) { return edgellm_docqa_add(qa, key.c_str(), text.c_str(), rep.get()); },
      [rep](napi_env env) { return report_object(env, *rep); });
}

napi_value m_remove(napi_env env, napi_callback_info info) {
  napi_value args[1];
  std::shared_ptr<DocqaCore> core = unpack(env, info, args, 1);
  if (!core) return nullptr;
  std::string key, error;
  if (!string_arg(env, args[0], "key", &key, &error)) return rejected_promise(env, "INVALID_ARGUMENT", error);
  auto rep = std::make_shared<edgellm_docqa_report>(edgellm_docqa_report_init());
  return docqa_call(
      env, "edgellm.DocQA.remove", core,
      [key, rep](edgellm_docqa* qa) { return edgellm_docqa_remove(qa, key.c_str(), rep.get()); },
      [rep](napi_env env) { return report_object(env, *rep); });
}

napi_value m_index_folder(napi_env env, napi_callback_info info) {
  napi_value args[1];
  std::shared_ptr<DocqaCore> core = unpack(env, info, args, 1);
  if (!core) return nullptr;
  std::string dir, error;
  if (!string_arg(env, args[0], "dir", &dir, &error)) return rejected_promise(env, "INVALID_ARGUMENT", error);
  auto rep = std::make_shared<edgellm_docqa_report>(edgellm_docqa_report_init());
  return docqa_call(
      env, "edgellm.DocQA.indexFolder", core,
      [dir, rep](edgellm_docqa* qa) { return edgellm_docqa_index_folder(qa, dir.c_str(), rep.get()); },
      [rep](napi_env env) { return report_object(env, *rep); });
}

// The result handed from the worker to the JS thread (freed with it).
struct ResultBox {
  edgellm_docqa_result* r = nullptr;
  ~ResultBox() { edgellm_docqa_result_free(r); }
};

napi_value m_search(napi_env env, napi_callback_info info) {
  napi_value args[2];
  std::shared_ptr<DocqaCore> core = unpack(env, info, args, 2);
  if (!core) return nullptr;
  std::string query, error;
  if (!string_arg(env, args[0], "query", &query, &error)) return rejected_promise(env, "INVALID_ARGUMENT", error);
  int32_t top_k = 0;
  OptionReader o(env, args[1], "options");
  o.integer("topK", 1, 4096, &top_k);
  if (!o.ok()) return rejected_promise(env, "INVALID_ARGUMENT", o.error());
  auto box = std::make_shared<ResultBox>();
  return docqa_call(
      env, "edgellm.DocQA.search", core,
      [query, top_k, box](edgellm_docqa* qa) { return edgellm_docqa_search(qa, query.c_str(), top_k, &box->r); },
      [box](napi_env env) -> napi_value {
        napi_value hits = hits_array(env, box->r);
        napi_value t = timings(env, box->r);
        napi_value o = js_object(env);
        if (!hits || !t || !o || !set_property(env, o, "hits", hits) || !set_property(env, o, "timings", t)) {
          return nullptr;
        }
        return o;
      });
}

napi_value m_ask(napi_env env, napi_callback_info info) {
  napi_value args[1];
  std::shared_ptr<DocqaCore> core = unpack(env, info, args, 1);
  if (!core) return nullptr;
  std::string question, error;
  if (!string_arg(env, args[0], "question", &question, &error)) {
    return rejected_promise(env, "INVALID_ARGUMENT", error);
  }
  auto box = std::make_shared<ResultBox>();
  return docqa_call(
      env, "edgellm.DocQA.ask", core,
      [question, box](edgellm_docqa* qa) { return edgellm_docqa_ask(qa, question.c_str(), &box->r); },
      [box](napi_env env) -> napi_value {
        const edgellm_docqa_result* r = box->r;
        napi_value context = hits_array(env, r);
        napi_value t = timings(env, r);
        std::vector<double> cites(r->citations, r->citations + r->n_citations);
        napi_value citations = js_number_array(env, cites);
        napi_value o = js_object(env);
        if (!context || !t || !citations || !o || !set_property(env, o, "answer", js_string(env, r->answer)) ||
            !set_property(env, o, "finishReason", js_string(env, edgellm_finish_reason_name(r->finish_reason))) ||
            (r->error[0] != '\0' && !set_property(env, o, "error", js_string(env, r->error))) ||
            !set_property(env, o, "citations", citations) || !set_property(env, o, "context", context) ||
            !set_property(env, o, "timings", t)) {
          return nullptr;
        }
        return o;
      });
}

napi_value m_list(napi_env env, napi_callback_info info) {
  napi_value args[1];
  std::shared_ptr<DocqaCore> core = unpack(env, info, args, 0);
  if (!core) return nullptr;
  auto text = std::make_shared<std::string>();
  return docqa_call(
      env, "edgellm.DocQA.list", core,
      [text](edgellm_docqa* qa) {
        return read_library_text(
            [qa](char* buf, size_t cap, size_t* len) { return edgellm_docqa_list_json(qa, buf, cap, len); },
            text.get());
      },
      [text](napi_env env) { return parse_json(env, *text); });
}

// close(): later calls reject; the index's memory goes when the calls in flight end.
napi_value m_close(napi_env env, napi_callback_info info) {
  napi_value args[1];
  std::shared_ptr<DocqaCore> core = unpack(env, info, args, 0);
  if (!core) return nullptr;
  core->closed = true;
  void* p = nullptr;
  napi_value self = nullptr;
  size_t argc = 0;
  if (napi_get_cb_info(env, info, &argc, nullptr, &self, nullptr) == napi_ok && napi_unwrap(env, self, &p) == napi_ok) {
    static_cast<DocqaHandle*>(p)->core.reset();  // this object's reference; calls in flight keep theirs
  }
  return js_undefined(env);
}

napi_value constructor(napi_env env, napi_callback_info info) {
  return construct_native<DocqaHandle>(env, info, &AddonData::constructing_docqa,
                                       "DocQA objects come from openDocQA()");
}

napi_value new_docqa(napi_env env, std::shared_ptr<DocqaCore> core) {
  return new_native<DocqaHandle>(env, &AddonData::docqa_constructor, &AddonData::constructing_docqa, std::move(core),
                                 "new DocQA");
}

// openDocQA(options) -> Promise<DocQA>.
napi_value open_docqa(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value options = nullptr;
  if (napi_get_cb_info(env, info, &argc, &options, nullptr, nullptr) != napi_ok) {
    throw_napi_failure(env, "napi_get_cb_info");
    return nullptr;
  }
  if (argc < 1 || type_of(env, options) != napi_object) {
    return rejected_promise(env, "INVALID_ARGUMENT", "openDocQA needs an options object ({embedder, indexPath, ...})");
  }
  auto core = std::make_shared<DocqaCore>();
  const char* const roles[3] = {"embedder", "reranker", "generator"};
  OptionReader o(env, options, "options");
  for (int i = 0; i < 3; ++i) {
    napi_value m = o.field(roles[i]);
    const napi_valuetype t = type_of(env, m);
    if (t == napi_undefined || t == napi_null) {
      if (i == 0) return rejected_promise(env, "INVALID_ARGUMENT", "options.embedder must be a Model (role 'embed')");
      continue;
    }
    core->models[i] = model_core_of(env, m);
    if (!core->models[i]) {
      return rejected_promise(env, "INVALID_ARGUMENT", std::string("options.") + roles[i] + " must be a Model");
    }
  }
  std::string index_path, query_prefix;
  bool has_prefix = type_of(env, o.field("queryPrefix")) != napi_undefined;
  o.string("indexPath", &index_path);
  o.string("queryPrefix", &query_prefix);
  edgellm_docqa_params p = edgellm_docqa_default_params();
  o.integer("chunkTokens", 0, 1 << 16, &p.chunk_tokens);
  o.integer("overlapTokens", 0, 1 << 15, &p.overlap_tokens);
  o.integer("topK", 1, 4096, &p.top_k);
  o.integer("candidates", 1, 4096, &p.candidates);
  o.integer("maxAnswerTokens", 1, 1 << 16, &p.max_answer_tokens);
  int vectors = p.vectors, truncation = p.truncation;
  o.choice("vectors", kVectors, &vectors);
  o.choice("truncate", kDocqaTruncations, &truncation);
  o.boolean("rebuild", &p.rebuild);
  if (!o.ok()) return rejected_promise(env, "INVALID_ARGUMENT", o.error());
  if (index_path.empty()) return rejected_promise(env, "INVALID_ARGUMENT", "options.indexPath must be a file path");
  p.vectors = static_cast<edgellm_docqa_vectors>(vectors);
  p.truncation = static_cast<edgellm_truncation>(truncation);
  auto holds = std::make_shared<Holds>();
  if (!take_holds(core->models, holds.get())) {
    return rejected_promise(env, status_code(EDGELLM_ERR_SHUT_DOWN), "a model given to openDocQA was released");
  }
  return run_async(
      env, "edgellm.openDocQA", nullptr,
      [core, holds, index_path, query_prefix, has_prefix, p](edgellm_runtime*, std::string* error) mutable {
        p.query_prefix = has_prefix ? query_prefix.c_str() : nullptr;
        const edgellm_status st = edgellm_docqa_create(holds->runtime[0], holds->runtime[1], holds->runtime[2],
                                                       index_path.c_str(), &p, &core->qa);
        if (st != EDGELLM_OK) *error = last_error_message(st);
        holds->uses.clear();
        return st;
      },
      [core](napi_env env) { return new_docqa(env, core); });
}

}  // namespace

bool define_docqa(napi_env env, napi_value exports, AddonData* data) {
  const napi_property_descriptor methods[] = {
      {"add", nullptr, m_add, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"remove", nullptr, m_remove, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"indexFolder", nullptr, m_index_folder, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"search", nullptr, m_search, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"ask", nullptr, m_ask, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"list", nullptr, m_list, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"close", nullptr, m_close, nullptr, nullptr, nullptr, napi_default_method, nullptr},
  };
  napi_value cls = nullptr, open_fn = nullptr;
  if (napi_define_class(env, "DocQA", NAPI_AUTO_LENGTH, constructor, nullptr, sizeof(methods) / sizeof(methods[0]),
                        methods, &cls) != napi_ok ||
      napi_create_reference(env, cls, 1, &data->docqa_constructor) != napi_ok ||
      napi_set_named_property(env, exports, "DocQA", cls) != napi_ok ||
      napi_create_function(env, "openDocQA", NAPI_AUTO_LENGTH, open_docqa, nullptr, &open_fn) != napi_ok ||
      !set_property(env, exports, "openDocQA", open_fn)) {
    throw_napi_failure(env, "define DocQA");
    return false;
  }
  return true;
}

}  // namespace edgellm_napi
