// `edgellm tokenize` / `edgellm detokenize`: inspect a model's tokenizer without loading its
// weights (GgufFile::open maps the file lazily; only the tokenizer.ggml.* metadata is read).
//   edgellm tokenize -m MODEL.gguf [--json] [--no-bos] [--parse-special] "text"
//   edgellm detokenize -m MODEL.gguf [--render-special] 1 2 3
// -m also accepts a Hugging Face tokenizer.json (tokenizer_config.json next to it is used).
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli_args.h"
#include "command.h"
#include "generation_options.h"
#include "core/error.h"
#include "core/json.h"
#include "gguf/gguf_reader.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace edgellm::cli {
namespace {

std::string read_whole_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error(ErrorCode::kIo, "cannot open '" + path + "'");
  std::string data;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) data.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw Error(ErrorCode::kIo, "cannot read '" + path + "'");
  return data;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
  if (path.empty()) throw Error(ErrorCode::kInvalidArgument, "-m MODEL is required");
  if (ends_with(path, ".json")) {
    const Json tj = Json::parse(read_whole_file(path));
    const size_t slash = path.find_last_of('/');
    const std::string config_path = (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) +
                                    "tokenizer_config.json";
    std::unique_ptr<Json> config;
    if (std::FILE* f = std::fopen(config_path.c_str(), "rb")) {
      std::fclose(f);
      config = std::make_unique<Json>(Json::parse(read_whole_file(config_path)));
    }
    return std::make_unique<Tokenizer>(vocab_data_from_hf_json(tj, config.get()));
  }
  const auto file = gguf::GgufFile::open(path);
  return Tokenizer::from_gguf(*file);
}

// A piece as readable UTF-8: bytes that are not (yet) a whole character are shown as <0xNN>.
std::string printable_piece(const std::string& piece) {
  std::string out;
  for (size_t pos = 0; pos < piece.size();) {
    size_t len = 0;
    bool valid = false;
    unicode::decode_one(piece, pos, &len, &valid);
    if (valid) {
      out.append(piece, pos, len);
    } else {
      for (size_t i = 0; i < len; ++i) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "<0x%02X>", static_cast<unsigned char>(piece[pos + i]));
        out += buf;
      }
    }
    pos += len;
  }
  return out;
}

int run_tokenize(const std::vector<std::string>& args) {
  ModelOptions model_opt;
  std::string file;
  bool json = false, no_bos = false, parse_special = false, timing = false;
  std::vector<std::string> words;
  ArgParser ap("tokenize", "-m MODEL [--json] [--no-bos] [--parse-special] (TEXT | -f FILE)");
  add_model_options(ap, &model_opt, "or a tokenizer.json; weights are not loaded");
  ap.add_string("-f,--file", &file, "FILE", "read the text from FILE instead of the arguments");
  ap.add_flag(shared_option("json"), &json, "{\"ids\": [...], \"pieces\": [...]}");
  ap.add_flag("--no-bos", &no_bos, "do not add BOS/EOS even if the vocabulary asks for them");
  ap.add_flag("--parse-special", &parse_special, "recognise control-token text such as <|im_start|>");
  ap.add_flag("--time", &timing, "print load and encode times and tokens/s to stderr");
  ap.allow_positionals(&words, "TEXT");
  if (!ap.parse(args)) return 0;
  std::string text;
  const std::string model = resolve_model_path(model_opt);
  if (!file.empty()) {
    text = read_text_file(file, "text file");
  } else {
    for (size_t i = 0; i < words.size(); ++i) text += (i ? " " : "") + words[i];
  }
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const auto tok = load_tokenizer(model);
  const auto t1 = Clock::now();
  const auto ids = tok->encode(text, !no_bos, parse_special);
  const auto t2 = Clock::now();
  if (timing) {
    const double load_s = std::chrono::duration<double>(t1 - t0).count();
    const double enc_s = std::chrono::duration<double>(t2 - t1).count();
    std::fprintf(stderr, "load %.3f s; encode %zu bytes -> %zu tokens in %.3f s: %.0f tokens/s, %.2f MB/s\n",
                 load_s, text.size(), ids.size(), enc_s, enc_s > 0 ? static_cast<double>(ids.size()) / enc_s : 0.0,
                 enc_s > 0 ? static_cast<double>(text.size()) / enc_s / 1e6 : 0.0);
  }
  if (json) {
    Json::Array jids, jpieces;
    for (int32_t id : ids) {
      jids.emplace_back(static_cast<int64_t>(id));
      jpieces.emplace_back(printable_piece(tok->token_to_piece(id, /*render_special=*/true)));
    }
    Json out = Json::object();
    out.set("ids", Json(std::move(jids)));
    out.set("pieces", Json(std::move(jpieces)));
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  for (int32_t id : ids) {
    std::string quoted;
    json_escape(quoted, printable_piece(tok->token_to_piece(id, true)));
    std::printf("%8d  %s\n", id, quoted.c_str());
  }
  std::printf("%zu tokens\n", ids.size());
  return 0;
}

int run_detokenize(const std::vector<std::string>& args) {
  ModelOptions model_opt;
  bool render_special = false;
  bool json = false;
  std::vector<std::string> words;
  ArgParser ap("detokenize", "-m MODEL [--render-special] ID [ID...]   (ids may also be comma-separated)");
  add_model_options(ap, &model_opt, "or a tokenizer.json; weights are not loaded");
  ap.add_flag("--render-special", &render_special, "print control tokens such as <|im_end|> as text");
  ap.add_flag(shared_option("json"), &json, "{\"text\": ...}");
  ap.allow_positionals(&words, "ID");
  if (!ap.parse(args)) return 0;
  std::vector<int32_t> ids;
  for (const std::string& w : words) {
    for (int32_t id : parse_int_list(w, "token id")) ids.push_back(id);
  }
  const auto tok = load_tokenizer(resolve_model_path(model_opt));
  const std::string text = tok->decode(ids, render_special);
  if (json) {
    Json out = Json::object();
    out.set("text", text);
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("%s\n", text.c_str());
  }
  return 0;
}

const CommandRegistration kTokenize("tokenize", "print the token ids and pieces of a text", run_tokenize);
const CommandRegistration kDetokenize("detokenize", "turn token ids back into text", run_detokenize);

}  // namespace
}  // namespace edgellm::cli
