// The Model's classify (classify.cpp): edgellm_classify on a libuv worker, for a generation model.
#ifndef EDGELLM_NAPI_CLASSIFY_H
#define EDGELLM_NAPI_CLASSIFY_H

#include <memory>

#include "compat.h"
#include "model_core.h"

namespace edgellm_napi {

// classify(text: string, labels: string[], options?) -> Promise<ClassifyResult>: the chosen label
// and its index, probabilities and log-probabilities per label (in label order), tokens per label.
napi_value classify(napi_env env, const std::shared_ptr<ModelCore>& core, napi_value text, napi_value labels,
                    napi_value options);

}  // namespace edgellm_napi

#endif  // EDGELLM_NAPI_CLASSIFY_H
