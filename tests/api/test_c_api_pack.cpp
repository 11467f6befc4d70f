// Pack files through the C ABI (libedgellm.so only): edgellm_pack_model's refusals (NULL path,
// missing file, a model with nothing to repack, a folder that does not exist) are statuses that
// leave no file behind, and runtime_params.pack_dir says where loads look: beside the model by
// default, in the folder given, nowhere for "". (Writing and mapping a real pack file, and its
// logits against repacking at load, are tests/model/test_pack_file.cpp and the NAPI suite,
// which quantize a model first: this test links nothing but the library.)
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "edgellm/edgellm.h"
#include "support/test_env.h"

namespace {

std::string info_json(edgellm_runtime* s) {
  size_t len = 0;
  edgellm_model_info_json(s, nullptr, 0, &len);
  std::string out(len + 1, '\0');
  EXPECT_EQ(edgellm_model_info_json(s, out.data(), out.size(), &len), EDGELLM_OK);
  out.resize(len);
  return out;
}

// The "pack_file" status of a runtime made with pack_dir (the library's JSON, not parsed: the
// value is a plain string without escapes here).
std::string pack_status(const std::string& model, const char* pack_dir) {
  edgellm_runtime_params p = edgellm_runtime_default_params();
  p.pack_dir = pack_dir;
  edgellm_runtime* s = nullptr;
  EXPECT_EQ(edgellm_runtime_create(model.c_str(), &p, &s), EDGELLM_OK) << edgellm_last_error();
  if (s == nullptr) return "";
  const std::string json = info_json(s);
  edgellm_runtime_destroy(s);
  const std::string key = "\"pack_file\": \"";
  const size_t at = json.find(key);
  if (at == std::string::npos) return "(no pack_file in " + json + ")";
  return json.substr(at + key.size(), json.find('"', at + key.size()) - at - key.size());
}

TEST(CApiPack, RefusalsAreStatusesAndWriteNothing) {
  const std::string stories = edgellm::test::shared_model("stories260K.gguf");
  const std::string dir = edgellm::test::temp_dir() + "/c_api_pack";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);

  EXPECT_EQ(edgellm_pack_model(nullptr, dir.c_str(), 0), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("model_path"), std::string::npos) << edgellm_last_error();
  EXPECT_EQ(edgellm_pack_model(stories.c_str(), dir.c_str(), -1), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_pack_model(stories.c_str(), dir.c_str(), 257), EDGELLM_ERR_INVALID_ARGUMENT);
  // "" would mean "never" to a load: refused here rather than read as "beside the model".
  EXPECT_EQ(edgellm_pack_model(stories.c_str(), "", 0), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("pack_dir"), std::string::npos) << edgellm_last_error();
  EXPECT_EQ(edgellm_pack_model("/no/such/model.gguf", dir.c_str(), 0), EDGELLM_ERR_IO);
  // stories260K is all F32: no matrix has an interleaved layout, so there is nothing to store.
  EXPECT_EQ(edgellm_pack_model(stories.c_str(), dir.c_str(), 0), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("interleaved"), std::string::npos) << edgellm_last_error();
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

TEST(CApiPack, PackDirSaysWhereLoadsLook) {
  const std::string stories = edgellm::test::shared_model("stories260K.gguf");
  const std::string dir = edgellm::test::temp_dir() + "/c_api_pack_dir";
  EXPECT_EQ(pack_status(stories, nullptr), "none at " + stories + ".x16.pack");
  EXPECT_EQ(pack_status(stories, dir.c_str()), "none at " + dir + "/stories260K.gguf.x16.pack");
  EXPECT_EQ(pack_status(stories, (dir + "/").c_str()), "none at " + dir + "/stories260K.gguf.x16.pack");
  EXPECT_EQ(pack_status(stories, ""), "off");  // never looked for
}

}  // namespace
