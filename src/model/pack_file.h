// Pack files: the repacked matrices of one model file (the 16-row interleaved X16 layouts of
// kernels/repack.h), stored once so that a later load maps them instead of repacking: "ready in
// milliseconds" instead of ~1 s per GB of weights, with no anonymous copy of the weights.
//
// Why a file beside the model (`<model>.x16.pack`) and not a repacked model GGUF:
//   - the model file stays what it was: llama.cpp and every other GGUF reader still load it, and
//     it is the portable fallback on a CPU without the packed kernels (plain NEON, the scalar
//     reference) or after the layouts change: nothing needs re-downloading;
//   - X16 tensors have no ggml type, so a "repacked model GGUF" could only be read by EdgeLLM
//     (other readers would reject it, or worse, read interleaved bytes as ordinary q4_0 rows);
//   - the layouts are a property of this build's kernels (kPackedLayoutVersion), not of the model:
//     a pack file is a cache that can be deleted and rebuilt (`edgellm pack <model>`) at any time.
// Cost: disk space for a second copy of the repackable matrices (~the model's size).
//
// Format: an ordinary GGUF v3 file (any GGUF reader parses it; it is not a model: no
// general.architecture), tensor data aligned to 4096 bytes (page-aligned tensors: no page holds
// two of them; every SIMD vector of a tensor is as aligned as in a repacked buffer).
//   metadata  edgellm.pack.format_version  u32     kPackFileFormatVersion
//             edgellm.pack.layout          string  "x16" (the family of kernels/repack.h)
//             edgellm.pack.layout_version  u32     kernels::kPackedLayoutVersion
//             edgellm.pack.source.fingerprint u64  model_fingerprint() of the model file
//             edgellm.pack.source.size     u64     the model file's size in bytes
//             edgellm.pack.source.name     string  its file name (for messages only)
//             edgellm.pack.isa             string  the ISA that wrote it (for messages only)
//             edgellm.pack.types           string array: the X16 type of each tensor, in order
//   tensors   one per repacked matrix, named as in the model ("blk.3.ffn_down.weight"; a tied
//             head is "token_embd.weight"), type i8, shape [packed row bytes, rows]: the bytes
//             kernels::repack_rows writes.
//
// Loading (Model::load with ModelLoadParams::pack_file, model_pack.cpp) refuses a file with a
// clear reason, and falls back to the model file, when: it cannot be parsed or is truncated; its
// format, layout or layout version is not this build's; it was made from another model file
// (fingerprint or size); a tensor is not a repackable matrix of this model, or has the wrong
// type, shape or alignment; the CPU lacks SIMD kernels for a packed type (unless repack=on); or
// the first 16-row group of a tensor differs from a repack of the model's own rows (a spot check
// against stale layouts and foreign data: corruption further inside is not detected — hashing
// every byte would cost the load time this file exists to save).
#pragma once

#include "core/progress.h"

#include <cstdint>
#include <string>

namespace edgellm {

class Model;

inline constexpr uint32_t kPackFileFormatVersion = 1;
inline constexpr const char* kPackLayoutFamily = "x16";
inline constexpr uint32_t kPackFileAlignment = 4096;

inline constexpr const char* kPackKeyFormatVersion = "edgellm.pack.format_version";
inline constexpr const char* kPackKeyLayout = "edgellm.pack.layout";
inline constexpr const char* kPackKeyLayoutVersion = "edgellm.pack.layout_version";
inline constexpr const char* kPackKeyFingerprint = "edgellm.pack.source.fingerprint";
inline constexpr const char* kPackKeySourceSize = "edgellm.pack.source.size";
inline constexpr const char* kPackKeySourceName = "edgellm.pack.source.name";
inline constexpr const char* kPackKeyIsa = "edgellm.pack.isa";
inline constexpr const char* kPackKeyTypes = "edgellm.pack.types";

// Where a model's pack file lives by default: "<model path>.x16.pack".
std::string default_pack_file_path(const std::string& model_path);
// The same name in folder `dir` ("<dir>/<model file name>.x16.pack"); dir "" = beside the model.
std::string pack_file_path(const std::string& model_path, const std::string& dir);

struct PackFileStats {
  int tensors = 0;
  uint64_t packed_bytes = 0;  // tensor data
  uint64_t file_bytes = 0;    // the whole file
};

// Writes the pack file of `model` to `path` (atomically: a temporary file renamed over it).
// Every matrix kernels::can_repack accepts is stored, whatever the active ISA (the file is for
// every CPU with the X16 kernels). Matrices the model already holds repacked are copied; the
// others are repacked a slab of rows at a time on `n_threads` threads (0 = the default count) of
// the shared pool, so the writer holds one slab, not a tensor. The model must have been loaded
// from a file (its fingerprint is recorded). Throws Error(kInvalidArgument) when the model has
// no repackable matrix, Error(kIo) when the file cannot be written.
// `progress` (optional) gets the fraction of matrix bytes written and the tensor's name.
PackFileStats write_pack_file(const Model& model, const std::string& path, int n_threads = 0,
                              const ProgressFn& progress = {});

// Whether a load on this CPU would map `model`'s pack file: every interleaved type in it needs a
// SIMD kernel here (else Model::load refuses the file, model_pack.cpp). True for a model with
// nothing to interleave (write_pack_file reports that one).
bool pack_file_usable_here(const Model& model);

}  // namespace edgellm
