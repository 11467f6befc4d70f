// Document Q&A for JS (docqa.cpp): openDocQA() and the DocQA class. JS thread.
#ifndef EDGELLM_NAPI_DOCQA_H
#define EDGELLM_NAPI_DOCQA_H

#include "addon.h"
#include "compat.h"

namespace edgellm_napi {

// Defines openDocQA and class DocQA on exports; records the constructor in data. False:
// exception pending.
bool define_docqa(napi_env env, napi_value exports, AddonData* data);

}  // namespace edgellm_napi

#endif  // EDGELLM_NAPI_DOCQA_H
