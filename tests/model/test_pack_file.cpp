// Pack files (model/pack_file.h): a model loaded with its pack file mapped computes exactly what
// the same model repacked at load computes (the independent reference: the portable file loaded
// with repack=on and no pack file), and every kind of bad pack file is refused with a clear
// reason while the load falls back to the portable file: truncated, garbage, from another model,
// corrupted data, a forged layout version or shape, and a CPU whose kernels lack the layouts
// (the scalar ISA pinned).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_writer.h"
#include "kernels/kernels.h"
#include "kernels/repack.h"
#include "model/model.h"
#include "model/pack_file.h"
#include "support/isa_guard.h"
#include "support/prompt_logits.h"
#include "support/synthetic_model.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

test::SyntheticModelSpec spec_for(TensorType type, bool tied, uint64_t seed = 7) {
  test::SyntheticModelSpec s;
  s.arch = "qwen2";
  s.weight_type = type;
  s.tied = tied;
  s.n_vocab = 320;  // a multiple of 16: the head is repacked too
  s.n_embd = 256;
  s.n_ff = 512;
  s.n_layer = 2;
  s.n_head = 4;
  s.n_head_kv = 2;
  s.seed = seed;
  return s;
}

constexpr int kMatrices = 2 * 7 + 1;  // 7 per layer and the head

std::vector<float> run(const Model& model) { return test::prompt_and_step_logits(model, 3); }

// Bit-identical: the same kernels multiply the same packed bytes.
void expect_same_logits(const std::vector<float>& got, const std::vector<float>& ref, const std::string& what) {
  ASSERT_EQ(got.size(), ref.size());
  EXPECT_EQ(std::memcmp(got.data(), ref.data(), ref.size() * sizeof(float)), 0) << what;
}

std::string model_file(const test::SyntheticModelSpec& s, const std::string& name) {
  const std::string path = test::temp_dir() + "/" + name + ".gguf";
  test::write_synthetic_model(s, path);
  std::filesystem::remove(default_pack_file_path(path));
  return path;
}

void write_pack_of(const std::string& model_path, const std::string& pack_path) {
  ModelLoadParams lp;
  lp.repack = RepackMode::kOff;
  lp.pack_file = PackFileMode::kOff;
  write_pack_file(*Model::load(model_path, lp), pack_path);
}

// The independent reference: repacked at load from the portable file, no pack file consulted.
std::unique_ptr<Model> repacked_at_load(const std::string& path) {
  ModelLoadParams lp;
  lp.repack = RepackMode::kOn;
  lp.pack_file = PackFileMode::kOff;
  return Model::load(path, lp);
}

std::unique_ptr<Model> with_pack(const std::string& path, const std::string& pack, PackFileMode mode,
                                 RepackMode repack = RepackMode::kAuto) {
  ModelLoadParams lp;
  lp.repack = repack;
  lp.pack_file = mode;
  lp.pack_path = pack;
  return Model::load(path, lp);
}

bool inside(const gguf::GgufFile* f, const uint8_t* p) {
  return f != nullptr && p >= f->mapping().data() && p < f->mapping().data() + f->mapping().size();
}

template <typename Fn>
std::string error_of(Fn&& fn, ErrorCode* code = nullptr) {
  try {
    fn();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

bool has_simd_packed_kernels() { return kernels::has_fast_packed_kernel(TensorType::Q4_0_X16); }

TEST(PackFile, MappedWeightsGiveTheLogitsOfRepackAtLoad) {
  if (!has_simd_packed_kernels()) GTEST_SKIP() << "no SIMD packed kernels on " << kernels::isa_name(kernels::active_isa());
  for (const TensorType type :
       {TensorType::Q4_0, TensorType::Q5_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K}) {
    for (const bool tied : {false, true}) {
      // Tied heads (token_embd follows the mapped head) for one legacy and one K type: CI time.
      if (tied && type != TensorType::Q4_0 && type != TensorType::Q4_K) continue;
      const std::string what = std::string(tensor_type_name(type)) + (tied ? " tied" : "");
      const std::string path = model_file(spec_for(type, tied), std::string("pack_") + tensor_type_name(type));
      write_pack_of(path, default_pack_file_path(path));
      const auto ref = repacked_at_load(path);
      const auto packed = Model::load(path);  // default parameters find the pack beside the model
      ASSERT_EQ(packed->pack_mapped_tensors(), kMatrices) << what << ": " << packed->pack_file_status();
      EXPECT_EQ(packed->pack_file_status(), "mapped " + default_pack_file_path(path));
      // No copy: nothing repacked into anonymous memory, the views point into the pack mapping.
      EXPECT_EQ(packed->repacked_tensors(), 0);
      EXPECT_EQ(packed->repacked_bytes(), 0u);
      EXPECT_TRUE(inside(packed->pack_file(), packed->layer(1).ffn_down.data)) << what;
      EXPECT_TRUE(inside(packed->pack_file(), packed->output().data)) << what;
      EXPECT_EQ(packed->layer(0).wq.type, ref->layer(0).wq.type) << what;
      EXPECT_EQ(packed->token_embd().data == packed->output().data, tied) << what;
      expect_same_logits(run(*packed), run(*ref), what);
      std::filesystem::remove(default_pack_file_path(path));
    }
  }
}

TEST(PackFile, WritingFromARepackedModelGivesTheSameFile) {
  // The writer's slab repacking against Model::repack_weights' parallel one: byte-equal files.
  const std::string path = model_file(spec_for(TensorType::Q4_K, false), "pack_same");
  const std::string a = path + ".a.pack", b = path + ".b.pack";
  write_pack_of(path, a);
  write_pack_file(*repacked_at_load(path), b);
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  const std::string ba((std::istreambuf_iterator<char>(fa)), {}), bb((std::istreambuf_iterator<char>(fb)), {});
  EXPECT_GT(ba.size(), 100000u);
  EXPECT_TRUE(ba == bb);
  // Ordinary GGUF: our reader opens it as any GGUF, i8 tensors of [packed row bytes, rows].
  const auto g = gguf::GgufFile::open(a);
  EXPECT_EQ(g->tensors().size(), static_cast<size_t>(kMatrices));
  EXPECT_EQ(g->tensors()[0].type, TensorType::I8);
  EXPECT_EQ(g->alignment(), kPackFileAlignment);
  EXPECT_FALSE(g->get_string("general.architecture").has_value());  // not a model
}

TEST(PackFile, AbsentDefaultIsNotAnErrorAndRepackOffIgnoresIt) {
  const std::string path = model_file(spec_for(TensorType::Q8_0, false), "pack_absent");
  const auto m = Model::load(path);
  EXPECT_EQ(m->pack_file_status(), "none at " + default_pack_file_path(path));
  EXPECT_EQ(m->pack_mapped_tensors(), 0);
  write_pack_of(path, default_pack_file_path(path));
  ModelLoadParams off;
  off.repack = RepackMode::kOff;
  const auto portable = Model::load(path, off);
  EXPECT_EQ(portable->pack_file_status(), "off");
  EXPECT_EQ(portable->layer(0).wq.type, TensorType::Q8_0);
  // An explicit path that does not exist is a refusal (kRequire: an error naming it).
  ErrorCode code{};
  const std::string e = error_of([&] { with_pack(path, path + ".missing", PackFileMode::kRequire); }, &code);
  EXPECT_EQ(code, ErrorCode::kIo);
  EXPECT_NE(e.find(".missing"), std::string::npos) << e;
  std::filesystem::remove(default_pack_file_path(path));
}

// pack_dir (an app's writable cache folder; the C ABI's service_params.pack_dir): the pack file
// is looked for as "<dir>/<model file name>.x16.pack", not beside the model, and mapped from there.
TEST(PackFile, PackDirHoldsItUnderTheModelsName) {
  if (!has_simd_packed_kernels()) GTEST_SKIP() << "no SIMD packed kernels on " << kernels::isa_name(kernels::active_isa());
  const std::string path = model_file(spec_for(TensorType::Q4_0, false), "pack_dir_model");
  const std::string dir = test::temp_dir() + "/pack_dir_cache";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string in_dir = dir + "/pack_dir_model.gguf.x16.pack";
  EXPECT_EQ(pack_file_path(path, dir), in_dir);
  EXPECT_EQ(pack_file_path(path, dir + "/"), in_dir);
  EXPECT_EQ(pack_file_path(path, ""), default_pack_file_path(path));
  write_pack_of(path, in_dir);
  ModelLoadParams lp;
  lp.pack_dir = dir;
  const auto m = Model::load(path, lp);
  EXPECT_EQ(m->pack_file_status(), "mapped " + in_dir);
  EXPECT_EQ(m->pack_mapped_tensors(), kMatrices);
  expect_same_logits(run(*m), run(*repacked_at_load(path)), "mapped from pack_dir");
  // Beside the model there is none, and without pack_dir the load does not find the folder's.
  const auto beside = Model::load(path);
  EXPECT_EQ(beside->pack_file_status(), "none at " + default_pack_file_path(path));
  std::filesystem::remove_all(dir);
}

// A bad pack file: kRequire throws `code` with `fragment` in the message; kAuto logs, falls back
// to the portable file (repacked at load) and computes the reference's logits.
void expect_refused(const std::string& model, const std::string& pack, ErrorCode code, const std::string& fragment,
                    const std::vector<float>& ref_logits) {
  ErrorCode got{};
  const std::string e = error_of([&] { with_pack(model, pack, PackFileMode::kRequire, RepackMode::kOn); }, &got);
  EXPECT_EQ(got, code) << e;
  EXPECT_NE(e.find(fragment), std::string::npos) << e;
  const auto m = with_pack(model, pack, PackFileMode::kAuto, RepackMode::kOn);
  EXPECT_EQ(m->pack_file_status().rfind("refused: ", 0), 0u) << m->pack_file_status();
  EXPECT_NE(m->pack_file_status().find(fragment), std::string::npos) << m->pack_file_status();
  EXPECT_EQ(m->pack_file(), nullptr);
  EXPECT_EQ(m->pack_mapped_tensors(), 0);
  EXPECT_EQ(m->repacked_tensors(), kMatrices);  // the fallback repacked everything itself
  expect_same_logits(run(*m), ref_logits, "fallback after: " + fragment);
}

// Rewrites a good pack file with `edit` applied to its metadata / tensor list.
void forge(const std::string& good, const std::string& out,
           const std::function<void(gguf::GgufWriter&, const gguf::GgufFile&)>& edit) {
  const auto g = gguf::GgufFile::open(good);
  gguf::GgufWriter w;
  w.set_alignment(g->alignment());
  w.copy_metadata_from(*g, [](std::string_view k) { return k == "general.alignment"; });
  edit(w, *g);
  w.write(out);
}

void add_tensors(gguf::GgufWriter& w, const gguf::GgufFile& g, size_t skip = SIZE_MAX) {
  for (size_t i = 0; i < g.tensors().size(); ++i) {
    if (i == skip) continue;
    const auto& t = g.tensors()[i];
    w.add_tensor(t.name, t.type, {t.ne[0], t.ne[1]}, t.data, t.n_bytes, gguf::GgufWriter::Ownership::kBorrow);
  }
}

TEST(PackFile, BadPackFilesAreRefusedAndTheLoadFallsBack) {
  const std::string path = model_file(spec_for(TensorType::Q4_0, false), "pack_bad");
  const std::string good = path + ".good.pack";
  write_pack_of(path, good);
  const std::vector<float> ref = run(*repacked_at_load(path));
  const std::string bad = path + ".bad.pack";

  // Truncated: the reader finds tensor data past the end.
  std::filesystem::copy_file(good, bad, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(bad, std::filesystem::file_size(good) / 2);
  expect_refused(path, bad, ErrorCode::kInvalidFile, bad, ref);

  // Garbage.
  {
    std::ofstream f(bad, std::ios::binary | std::ios::trunc);
    for (int i = 0; i < 5000; ++i) f.put(static_cast<char>((i * 131 + 7) & 0xff));
  }
  expect_refused(path, bad, ErrorCode::kInvalidFile, bad, ref);

  // An ordinary model GGUF is not a pack file.
  expect_refused(path, path, ErrorCode::kInvalidFile, "not a pack file", ref);

  // Made from another model: same shape and type, other weights.
  const std::string other = model_file(spec_for(TensorType::Q4_0, false, /*seed=*/8), "pack_other");
  write_pack_of(other, bad);
  expect_refused(path, bad, ErrorCode::kInvalidFile, "was made from another model file", ref);

  // Corrupted first group of one tensor (the spot check): flip one byte of its data.
  {
    const auto g = gguf::GgufFile::open(good);
    const size_t at = static_cast<size_t>(g->tensors()[3].data - g->mapping().data()) + 100;
    std::filesystem::copy_file(good, bad, std::filesystem::copy_options::overwrite_existing);
    std::fstream f(bad, std::ios::binary | std::ios::in | std::ios::out);
    f.seekg(static_cast<std::streamoff>(at));
    const char c = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(at));
    f.put(static_cast<char>(c ^ 0x5a));
  }
  expect_refused(path, bad, ErrorCode::kInvalidFile, "are not the repacked rows", ref);

  // Another layout version (a build whose kernels changed the layout).
  forge(good, bad, [](gguf::GgufWriter& w, const gguf::GgufFile& g) {
    w.set_u32(kPackKeyLayoutVersion, kernels::kPackedLayoutVersion + 1);
    add_tensors(w, g);
  });
  expect_refused(path, bad, ErrorCode::kUnsupported, "layout version " + std::to_string(kernels::kPackedLayoutVersion + 1), ref);

  // A tensor with the wrong shape (one row fewer).
  forge(good, bad, [](gguf::GgufWriter& w, const gguf::GgufFile& g) {
    const auto& t = g.tensors()[0];
    w.add_tensor(t.name, t.type, {t.ne[0], t.ne[1] - 1}, t.data, t.n_bytes - static_cast<size_t>(t.ne[0]),
                 gguf::GgufWriter::Ownership::kBorrow);
    add_tensors(w, g, /*skip=*/0);
  });
  expect_refused(path, bad, ErrorCode::kInvalidFile, "expected i8 [", ref);

  // A tensor the model does not have, and a types list of the wrong length.
  forge(good, bad, [](gguf::GgufWriter& w, const gguf::GgufFile& g) {
    add_tensors(w, g);
    const auto& t = g.tensors()[0];
    w.add_tensor("blk.9.attn_q.weight", t.type, {t.ne[0], t.ne[1]}, t.data, t.n_bytes, gguf::GgufWriter::Ownership::kBorrow);
  });
  expect_refused(path, bad, ErrorCode::kInvalidFile, "edgellm.pack.types", ref);

  std::filesystem::remove(good);
  std::filesystem::remove(bad);
}

TEST(PackFile, ACpuWithoutThePackedKernelsRefusesIt) {
  const test::IsaGuard guard;
  const std::string path = model_file(spec_for(TensorType::Q4_K, true), "pack_isa");
  const std::string pack = default_pack_file_path(path);
  write_pack_of(path, pack);
  kernels::set_active_isa(kernels::Isa::kScalar);  // as a CPU with none of the X16 SIMD kernels
  ErrorCode code{};
  const std::string e = error_of([&] { with_pack(path, pack, PackFileMode::kRequire); }, &code);
  EXPECT_EQ(code, ErrorCode::kUnsupported) << e;
  EXPECT_NE(e.find("q4_Kx16 matrices, which this CPU's kernels (scalar) do not multiply with SIMD"), std::string::npos) << e;
  // Default parameters: refused, and the portable file is used as it is (auto repacks nothing here).
  const auto m = Model::load(path);
  EXPECT_EQ(m->pack_file_status().rfind("refused: ", 0), 0u) << m->pack_file_status();
  EXPECT_EQ(m->pack_mapped_tensors(), 0);
  EXPECT_EQ(m->repacked_tensors(), 0);
  EXPECT_EQ(m->layer(0).wq.type, TensorType::Q4_K);
  // repack=on takes it anyway (the scalar reference multiplies the packed layouts): the same
  // logits as repacking at load on this ISA.
  const auto forced = with_pack(path, pack, PackFileMode::kRequire, RepackMode::kOn);
  EXPECT_EQ(forced->pack_mapped_tensors(), kMatrices);
  expect_same_logits(run(*forced), run(*repacked_at_load(path)), "scalar, repack=on");
  std::filesystem::remove(pack);
}

}  // namespace
}  // namespace edgellm
