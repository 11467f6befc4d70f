// The endpoints of `edgellm serve` by method and path (http_server.h lists them): what a request
// head names, decided on the I/O thread before any body is read.
#pragma once

#include <string>
#include <string_view>

namespace edgellm::server {

// clang-format off
enum class EndpointId {
  kChat, kCompletion, kTokenize, kDetokenize, kApplyTemplate, kModels, kHealth, kMetrics, kPage,
  kImport, kExport, kDelete, kAdminSwap, kAdminReload, kAdminPressure, kAdminDegradation,
  kAdminPause, kAdminResume, kAdminState, kAdminTrim, kEmbeddings, kRerank, kClassify,
  kDocqaPut, kDocqaList, kDocqaDelete, kDocqaSearch, kDocqaAsk,
};
// clang-format on

struct EndpointMatch {
  bool found = false;      // the path names an endpoint
  bool method_ok = false;  // ... and the method is one it takes
  EndpointId ep = EndpointId::kHealth;
  std::string session_id;  // export / delete; the document key (still encoded) of a docqa delete
  const char* allow = "";  // the methods it takes (405's Allow)
};

// The endpoint `path` names and whether `method` is one it takes (GET includes HEAD).
EndpointMatch match_endpoint(std::string_view method, const std::string& path);

bool is_admin(EndpointId ep);   // /admin/*: only on a server with an API key
bool is_docqa(EndpointId ep);   // /v1/docqa/*: within their own slots
bool is_helper(EndpointId ep);  // /tokenize, /detokenize, /apply-template: within the helper slots

}  // namespace edgellm::server
