// Module functions over the model registry and the planner (edgellm.h, "hot swap, registry" and
// "device fitness"). Each hashes, copies or maps files, so each runs on a libuv worker thread and
// returns a Promise:
//   registryInstall(registryDir, filePath, { name, version, sha256?, move? }) -> Promise<ModelManifest>
//   registryResolve(registryDir, nameOrKey)       -> Promise<string>  (a verified path)
//   registryList(registryDir)                     -> Promise<RegistryListing>
//   registrySetCurrent(registryDir, name, version) -> Promise<void>   (a rollback)
//   registryRemove(registryDir, name, version)    -> Promise<void>
//   plan(request: PlanRequest)                    -> Promise<Plan>
// Arguments of the wrong type reject with INVALID_ARGUMENT before anything runs.
#include <memory>
#include <string>
#include <vector>

#include "addon.h"
#include "async_call.h"
#include "js.h"

namespace edgellm_napi {

namespace {

// The call's arguments (undefined past argc).
std::vector<napi_value> args_of(napi_env env, napi_callback_info info, size_t n) {
  std::vector<napi_value> args(n, nullptr);
  size_t argc = n;
  if (napi_get_cb_info(env, info, &argc, args.data(), nullptr, nullptr) != napi_ok) return {};
  for (size_t i = argc; i < n; ++i) args[i] = js_undefined(env);
  return args;
}

// Reads the string arguments named in `names` (nullptr-terminated) into *out; false with the
// message in *error.
bool read_strings(napi_env env, const std::vector<napi_value>& args, const char* const* names,
                  std::vector<std::string>* out, std::string* error) {
  for (size_t i = 0; names[i]; ++i) {
    std::string s;
    if (i >= args.size() || !read_string(env, args[i], &s)) {
      *error = std::string(names[i]) + " must be a string";
      return false;
    }
    out->push_back(std::move(s));
  }
  return true;
}

// A library call that writes JSON (or text) with the caller-owned-buffer convention, on a
// worker thread; the promise resolves with the parsed JSON (or the text).
template <typename Fill>
napi_value json_call(napi_env env, const char* name, Fill fill, bool parse) {
  auto text = std::make_shared<std::string>();
  return run_async(
      env, name, nullptr,
      [fill, text](edgellm_runtime*, std::string* error) {
        const edgellm_status st = read_library_text(fill, text.get());
        if (st != EDGELLM_OK) *error = last_error_message(st);
        return st;
      },
      [text, parse](napi_env env) { return parse ? parse_json(env, *text) : js_string(env, *text); });
}

napi_value registry_install(napi_env env, napi_callback_info info) {
  const std::vector<napi_value> args = args_of(env, info, 3);
  static const char* const names[] = {"registryDir", "filePath", nullptr};
  std::vector<std::string> s;
  std::string error;
  if (args.empty() || !read_strings(env, args, names, &s, &error)) return rejected_promise(env, "INVALID_ARGUMENT", error);
  OptionReader r(env, args[2], "options");
  std::string name, version, sha256;
  bool move = false;
  r.string("name", &name);
  r.string("version", &version);
  r.string("sha256", &sha256);
  r.boolean("move", &move);
  if (r.ok() && (name.empty() || version.empty())) r.fail("options.name and options.version are required");
  if (!r.ok()) return rejected_promise(env, "INVALID_ARGUMENT", r.error());
  auto manifest = std::make_shared<std::string>();
  auto in = std::make_shared<std::vector<std::string>>(std::vector<std::string>{s[0], s[1], name, version, sha256});
  return run_async(
      env, "edgellm.registryInstall", nullptr,
      [in, move, manifest](edgellm_runtime*, std::string* error) {
        const std::vector<std::string>& a = *in;
        // The install happens once: the manifest always fits 16 KiB (edgellm.h).
        manifest->assign(16384, '\0');
        size_t length = 0;
        const edgellm_status st =
            edgellm_registry_install(a[0].c_str(), a[1].c_str(), a[2].c_str(), a[3].c_str(),
                                     a[4].empty() ? nullptr : a[4].c_str(), move, manifest->data(), manifest->size(), &length);
        if (st != EDGELLM_OK) {
          *error = last_error_message(st);
          return st;
        }
        manifest->resize(length);
        return st;
      },
      [manifest](napi_env env) { return parse_json(env, *manifest); });
}

napi_value registry_resolve(napi_env env, napi_callback_info info) {
  const std::vector<napi_value> args = args_of(env, info, 2);
  static const char* const names[] = {"registryDir", "nameOrKey", nullptr};
  std::vector<std::string> s;
  std::string error;
  if (args.empty() || !read_strings(env, args, names, &s, &error)) return rejected_promise(env, "INVALID_ARGUMENT", error);
  return json_call(
      env, "edgellm.registryResolve",
      [s](char* buf, size_t capacity, size_t* length) {
        return edgellm_registry_resolve(s[0].c_str(), s[1].c_str(), buf, capacity, length);
      },
      false);
}

napi_value registry_list(napi_env env, napi_callback_info info) {
  const std::vector<napi_value> args = args_of(env, info, 1);
  static const char* const names[] = {"registryDir", nullptr};
  std::vector<std::string> s;
  std::string error;
  if (args.empty() || !read_strings(env, args, names, &s, &error)) return rejected_promise(env, "INVALID_ARGUMENT", error);
  return json_call(
      env, "edgellm.registryList",
      [s](char* buf, size_t capacity, size_t* length) { return edgellm_registry_list_json(s[0].c_str(), buf, capacity, length); },
      true);
}

// registrySetCurrent / registryRemove: (registryDir, name, version) -> Promise<void>.
template <edgellm_status (*Fn)(const char*, const char*, const char*)>
napi_value registry_version_call(napi_env env, napi_callback_info info, const char* name) {
  const std::vector<napi_value> args = args_of(env, info, 3);
  static const char* const names[] = {"registryDir", "name", "version", nullptr};
  std::vector<std::string> s;
  std::string error;
  if (args.empty() || !read_strings(env, args, names, &s, &error)) return rejected_promise(env, "INVALID_ARGUMENT", error);
  return run_async(
      env, name, nullptr,
      [s](edgellm_runtime*, std::string* error) {
        const edgellm_status st = Fn(s[0].c_str(), s[1].c_str(), s[2].c_str());
        if (st != EDGELLM_OK) *error = last_error_message(st);
        return st;
      },
      [](napi_env env) { return js_undefined(env); });
}

napi_value registry_set_current(napi_env env, napi_callback_info info) {
  return registry_version_call<edgellm_registry_set_current>(env, info, "edgellm.registrySetCurrent");
}

napi_value registry_remove(napi_env env, napi_callback_info info) {
  return registry_version_call<edgellm_registry_remove>(env, info, "edgellm.registryRemove");
}

// plan(request): the request object is written as JSON here, on the JS thread.
napi_value plan(napi_env env, napi_callback_info info) {
  const std::vector<napi_value> args = args_of(env, info, 1);
  if (args.empty()) return nullptr;
  if (type_of(env, args[0]) != napi_object) return rejected_promise(env, "INVALID_ARGUMENT", "request must be an object");
  auto request = std::make_shared<std::string>();
  if (!stringify_json(env, args[0], request.get())) {
    napi_value exception = nullptr;
    napi_get_and_clear_last_exception(env, &exception);
    return rejected_promise(env, "INVALID_ARGUMENT", "request cannot be written as JSON");
  }
  return json_call(
      env, "edgellm.plan",
      [request](char* buf, size_t capacity, size_t* length) { return edgellm_plan_json(request->c_str(), buf, capacity, length); },
      true);
}

}  // namespace

bool define_registry_functions(napi_env env, napi_value exports) {
  struct Fn {
    const char* name;
    napi_callback cb;
  };
  const Fn fns[] = {{"registryInstall", registry_install},     {"registryResolve", registry_resolve},
                    {"registryList", registry_list},           {"registrySetCurrent", registry_set_current},
                    {"registryRemove", registry_remove},       {"plan", plan}};
  for (const Fn& f : fns) {
    napi_value fn = nullptr;
    if (napi_create_function(env, f.name, NAPI_AUTO_LENGTH, f.cb, nullptr, &fn) != napi_ok ||
        !set_property(env, exports, f.name, fn)) {
      throw_napi_failure(env, "module init");
      return false;
    }
  }
  return true;
}

}  // namespace edgellm_napi
