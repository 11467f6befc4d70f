// The Model's embedding methods (embeddings.cpp), for a model loaded with role 'embed' (or an
// encoder file). JS thread; the work runs on a libuv worker (edgellm_embed / edgellm_rerank
// block), so the promises never hold up the JS thread.
#ifndef EDGELLM_NAPI_EMBEDDINGS_H
#define EDGELLM_NAPI_EMBEDDINGS_H

#include <memory>

#include "compat.h"
#include "model_core.h"

namespace edgellm_napi {

// embed(texts: string | string[], options?) -> Promise<EmbedResult>: vectors as Float32Arrays
// over one ArrayBuffer (rows x dims floats), tokens per text, what ran.
napi_value embed(napi_env env, const std::shared_ptr<ModelCore>& core, napi_value texts, napi_value options);
// rerank(query, documents: string[], options?) -> Promise<RerankResult>: scores in document
// order and results best first ({index, relevanceScore}; options.topN cuts them).
napi_value rerank(napi_env env, const std::shared_ptr<ModelCore>& core, napi_value query, napi_value documents,
                  napi_value options);

}  // namespace edgellm_napi

#endif  // EDGELLM_NAPI_EMBEDDINGS_H
