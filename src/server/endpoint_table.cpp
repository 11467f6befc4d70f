#include "server/endpoint_table.h"

#include "server/docqa_endpoints.h"
#include "server/session_endpoints.h"

namespace edgellm::server {

bool is_admin(EndpointId ep) {
  using E = EndpointId;
  return ep == E::kAdminSwap || ep == E::kAdminReload || ep == E::kAdminPressure || ep == E::kAdminDegradation ||
         ep == E::kAdminPause || ep == E::kAdminResume || ep == E::kAdminState || ep == E::kAdminTrim;
}

bool is_docqa(EndpointId ep) {
  using E = EndpointId;
  return ep == E::kDocqaPut || ep == E::kDocqaList || ep == E::kDocqaDelete || ep == E::kDocqaSearch ||
         ep == E::kDocqaAsk;
}

bool is_helper(EndpointId ep) {
  return ep == EndpointId::kTokenize || ep == EndpointId::kDetokenize || ep == EndpointId::kApplyTemplate;
}

EndpointMatch match_endpoint(std::string_view method, const std::string& path) {
  EndpointMatch m;
  const bool get = method == "GET" || method == "HEAD";
  auto is = [&](EndpointId ep, bool method_ok, const char* allow) {
    m.found = true;
    m.ep = ep;
    m.method_ok = method_ok;
    m.allow = allow;
  };
  if (path == "/v1/chat/completions" || path == "/chat/completions") {
    is(EndpointId::kChat, method == "POST", "POST");
  } else if (path == "/v1/completions" || path == "/completions") {
    is(EndpointId::kCompletion, method == "POST", "POST");
  } else if (path == "/tokenize") {
    is(EndpointId::kTokenize, method == "POST", "POST");
  } else if (path == "/detokenize") {
    is(EndpointId::kDetokenize, method == "POST", "POST");
  } else if (path == "/apply-template") {
    is(EndpointId::kApplyTemplate, method == "POST", "POST");
  } else if (path == "/v1/models" || path == "/models") {
    is(EndpointId::kModels, get, "GET, HEAD");
  } else if (path == "/health") {
    is(EndpointId::kHealth, get, "GET, HEAD");
  } else if (path == "/metrics") {
    is(EndpointId::kMetrics, get, "GET, HEAD");
  } else if (path == "/") {
    is(EndpointId::kPage, get, "GET, HEAD");
  } else if (path == "/admin/swap") {
    is(EndpointId::kAdminSwap, method == "POST", "POST");
  } else if (path == "/admin/reload") {
    is(EndpointId::kAdminReload, method == "POST", "POST");
  } else if (path == "/admin/pressure") {
    is(EndpointId::kAdminPressure, method == "POST", "POST");
  } else if (path == "/admin/degradation") {
    is(EndpointId::kAdminDegradation, get, "GET, HEAD");
  } else if (path == "/admin/pause") {
    is(EndpointId::kAdminPause, method == "POST", "POST");
  } else if (path == "/admin/resume") {
    is(EndpointId::kAdminResume, method == "POST", "POST");
  } else if (path == "/admin/state") {
    is(EndpointId::kAdminState, get, "GET, HEAD");
  } else if (path == "/admin/trim") {
    is(EndpointId::kAdminTrim, method == "POST", "POST");
  } else if (path == "/v1/embeddings" || path == "/embeddings") {
    is(EndpointId::kEmbeddings, method == "POST", "POST");
  } else if (path == "/v1/rerank" || path == "/rerank" || path == "/v1/reranking" || path == "/reranking") {
    is(EndpointId::kRerank, method == "POST", "POST");
  } else if (path == "/v1/classify" || path == "/classify") {
    is(EndpointId::kClassify, method == "POST", "POST");
  } else if (path == "/v1/docqa/documents") {
    is(method == "POST" ? EndpointId::kDocqaPut : EndpointId::kDocqaList, get || method == "POST", "GET, HEAD, POST");
  } else if (std::string key = docqa_document_path_key(path); !key.empty()) {
    is(EndpointId::kDocqaDelete, method == "DELETE", "DELETE");
    m.session_id = std::move(key);
  } else if (path == "/v1/docqa/search") {
    is(EndpointId::kDocqaSearch, method == "POST", "POST");
  } else if (path == "/v1/docqa/ask") {
    is(EndpointId::kDocqaAsk, method == "POST", "POST");
  } else if (path == "/v1/sessions/import") {
    is(EndpointId::kImport, method == "POST", "POST");
  } else if (std::string id = session_export_id(path); !id.empty()) {
    // GET too: a plain download (`curl -o`, a browser) of the same bytes.
    is(EndpointId::kExport, get || method == "POST", "GET, HEAD, POST");
    m.session_id = std::move(id);
  } else if (std::string sid = session_id_of(path); !sid.empty() && sid != "import") {
    is(EndpointId::kDelete, method == "DELETE", "DELETE");
    m.session_id = std::move(sid);
  }
  return m;
}

}  // namespace edgellm::server
