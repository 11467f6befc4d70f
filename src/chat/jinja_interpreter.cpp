#include "chat/jinja_interpreter.h"

#include <ctime>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "chat/jinja_filters.h"
#include "chat/jinja_methods.h"
#include "chat/jinja_tests.h"

namespace edgellm::jinja {

namespace {

// Combined nesting of statements, expressions and macro calls being evaluated at once. Each level
// is a few native stack frames, so this bounds stack use even for recursive macros.
constexpr int kMaxNesting = 400;

// jinja2 compiles every scope (the template, a loop body, a macro, a with/call/set block) to a
// Python function and decides at compile time how each name stored in it starts out: a name that
// the scope stores before it ever reads it, and that no enclosing scope refers to, starts
// undefined; a nested scope that reads it before the store sees undefined too, not an outer or
// context value. Names stored in only some branches of an if start from the outer value. ScopeInfo
// records the names that start undefined, so lookups reproduce jinja2's output exactly.
struct ScopeInfo {
  std::set<std::string> all_refs;  // names this scope or an enclosing one refers to
  std::set<std::string> undefined;
};

struct Symbols {
  std::set<std::string> refs;
  std::set<std::string> stores;
  std::set<std::string> undefined;
  const std::set<std::string>* parent_refs = nullptr;

  void load(const std::string& n) { refs.insert(n); }
  void store(const std::string& n) {
    stores.insert(n);
    if (refs.insert(n).second && !(parent_refs && parent_refs->count(n))) undefined.insert(n);
  }
};

void load_names(const Expr* e, Symbols& sym) {
  if (!e) return;
  if (e->kind == ExprKind::kName) sym.load(e->name);
  for (const auto& a : e->args) load_names(a.get(), sym);
  for (const auto& kv : e->kwargs) load_names(kv.second.get(), sym);
}

void store_target(const Expr& target, Symbols& sym) {
  if (target.kind == ExprKind::kName) sym.store(target.name);
  if (target.kind == ExprKind::kTuple) {
    for (const auto& t : target.args) store_target(*t, sym);
  }
  if (target.kind == ExprKind::kGetAttr) load_names(target.args[0].get(), sym);  // ns.attr reads ns
}

void visit_body(const StmtList& body, Symbols& sym);

// jinja2's branch_update: a name stored in every branch keeps its start; otherwise it is loaded
// from the outer scope.
void merge_branches(Symbols& sym, const std::vector<Symbols>& branches) {
  std::map<std::string, size_t> counts;
  for (const auto& b : branches) {
    for (const auto& t : b.stores) {
      if (!sym.stores.count(t)) ++counts[t];
    }
  }
  for (const auto& b : branches) {
    sym.refs.insert(b.refs.begin(), b.refs.end());
    sym.stores.insert(b.stores.begin(), b.stores.end());
    sym.undefined.insert(b.undefined.begin(), b.undefined.end());
  }
  for (const auto& [name, count] : counts) {
    if (count != branches.size()) sym.undefined.erase(name);
  }
}

// An if with its elif chain: jinja2 sees [body, elif nodes, else] as three branches.
void visit_if(const Stmt& s, size_t first, Symbols& sym) {
  load_names(s.conds[first].get(), sym);
  std::vector<Symbols> branches(3, sym);
  visit_body(s.bodies[first], branches[0]);
  if (first == 0) {
    for (size_t i = 1; i < s.conds.size(); ++i) {
      // Each elif is an if node of its own (no elif/else), visited in the elif branch.
      Symbols& elif = branches[1];
      load_names(s.conds[i].get(), elif);
      std::vector<Symbols> inner(3, elif);
      visit_body(s.bodies[i], inner[0]);
      merge_branches(elif, inner);
    }
    if (s.bodies.size() > s.conds.size()) visit_body(s.bodies.back(), branches[2]);
  }
  merge_branches(sym, branches);
}

void visit_body(const StmtList& body, Symbols& sym) {
  for (const auto& sp : body) {
    const Stmt& s = *sp;
    switch (s.kind) {
      case StmtKind::kPrint:
      case StmtKind::kDo:
      case StmtKind::kFor:  // only the iterable belongs to this scope; the body is a new one
      case StmtKind::kCallBlock:
        load_names(s.expr.get(), sym);
        break;
      case StmtKind::kIf:
        visit_if(s, 0, sym);
        break;
      case StmtKind::kSet:
        load_names(s.expr.get(), sym);
        store_target(*s.target, sym);
        break;
      case StmtKind::kSetBlock:
        store_target(*s.target, sym);
        break;
      case StmtKind::kMacro:
        sym.store(s.text);
        break;
      case StmtKind::kFilterBlock:
        for (const auto& f : s.filters) load_names(f.get(), sym);
        break;
      case StmtKind::kWith:
        for (const auto& e : s.exprs) load_names(e.get(), sym);
        break;
      default:
        break;
    }
  }
}

struct Frame {
  std::vector<std::pair<std::string, Value>> vars;
  std::shared_ptr<Frame> parent;
  const ScopeInfo* scope = nullptr;  // set on frames that start a jinja2 scope

  const Value* lookup(std::string_view name) const {
    for (const Frame* f = this; f; f = f->parent.get()) {
      for (const auto& kv : f->vars) {
        if (kv.first == name) return &kv.second;
      }
      if (f->scope && f->scope->undefined.count(std::string(name))) return nullptr;
    }
    return nullptr;
  }
  void set(const std::string& name, Value v) {
    for (auto& kv : vars) {
      if (kv.first == name) {
        kv.second = std::move(v);
        return;
      }
    }
    vars.emplace_back(name, std::move(v));
  }
};
using FramePtr = std::shared_ptr<Frame>;

FramePtr child_of(const FramePtr& parent, const ScopeInfo* scope = nullptr) {
  auto f = std::make_shared<Frame>();
  f->parent = parent;
  f->scope = scope;
  return f;
}

const ScopeInfo* scope_of(const Frame* f) {
  for (; f; f = f->parent.get()) {
    if (f->scope) return f->scope;
  }
  return nullptr;
}

void target_names(const Expr& target, std::vector<std::string>& out) {
  if (target.kind == ExprKind::kName) out.push_back(target.name);
  if (target.kind == ExprKind::kTuple) {
    for (const auto& t : target.args) target_names(*t, out);
  }
}

enum class Flow { kNormal, kBreak, kContinue };

class Interpreter {
 public:
  explicit Interpreter(const RenderOptions& options) : opt_(options) {}

  std::string run(const StmtList& body, const Value& context) {
    auto globals = std::make_shared<Frame>();
    install_globals(*globals);
    if (context.is_dict()) {
      for (const auto& kv : context.dict_ptr()->items) globals->set(kv.first, kv.second);
    }
    auto top = child_of(globals, scope_for(body, {}, nullptr));
    std::string out;
    exec(body, top, out);
    return out;
  }

 private:
  struct NestGuard {
    int& n;
    NestGuard(int& counter, SourcePos pos) : n(counter) {
      if (++n > kMaxNesting) {
        --n;
        fail_at(pos, "template nested too deeply (recursion limit)");
      }
    }
    ~NestGuard() { --n; }
  };

  // The jinja2 scope analysis of a body, computed once per body (a body always sits at the same
  // place in the tree, so its enclosing scopes are always the same).
  const ScopeInfo* scope_for(const StmtList& body, const std::vector<std::string>& params, const Frame* parent) {
    auto it = scopes_.find(&body);
    if (it != scopes_.end()) return &it->second;
    const ScopeInfo* outer = scope_of(parent);
    Symbols sym;
    sym.parent_refs = outer ? &outer->all_refs : nullptr;
    for (const auto& p : params) sym.refs.insert(p);
    visit_body(body, sym);
    ScopeInfo info;
    info.all_refs = std::move(sym.refs);
    if (outer) info.all_refs.insert(outer->all_refs.begin(), outer->all_refs.end());
    info.undefined = std::move(sym.undefined);
    return &scopes_.emplace(&body, std::move(info)).first->second;
  }

  void step(SourcePos pos) {
    if (++steps_ > opt_.max_steps) {
      fail_at(pos, "template exceeded the limit of " + std::to_string(opt_.max_steps) + " evaluation steps");
    }
  }

  void emit(std::string& out, std::string_view s, SourcePos pos) {
    if (out.size() + s.size() > opt_.max_output_bytes) {
      fail_at(pos, "rendered output exceeds the limit of " + std::to_string(opt_.max_output_bytes) + " bytes");
    }
    out += s;
  }

  // ------------------------------------------------------------ globals
  void install_globals(Frame& g) {
    g.set("range", Value::function("range", [](CallArgs& a) {
      auto num = [](const Value& v) {
        if (!v.is_int() && !v.is_bool()) value_error(std::string("range() needs integers, got ") + v.type_name());
        return v.is_bool() ? int64_t{v.as_bool()} : v.as_int();
      };
      int64_t start = 0, stop = 0, stride = 1;
      if (a.positional.size() == 1) {
        stop = num(a.positional[0]);
      } else if (a.positional.size() == 2 || a.positional.size() == 3) {
        start = num(a.positional[0]);
        stop = num(a.positional[1]);
        if (a.positional.size() == 3) stride = num(a.positional[2]);
      } else {
        value_error("range() expects 1 to 3 integer arguments");
      }
      if (stride == 0) value_error("range() arg 3 must not be zero");
      std::vector<Value> out;
      for (int64_t i = start; stride > 0 ? i < stop : i > stop; i += stride) {
        check_collection_size(out.size() + 1);
        out.emplace_back(i);
        if ((stride > 0 && i > INT64_MAX - stride) || (stride < 0 && i < INT64_MIN - stride)) break;
      }
      return Value::list(std::move(out));
    }));
    auto make_dict = [](CallArgs& a, bool ns) {
      auto d = std::make_shared<DictData>();
      d->is_namespace = ns;
      for (const auto& p : a.positional) {
        if (!p.is_dict()) value_error(std::string(ns ? "namespace" : "dict") + "() positional argument must be a mapping");
        for (const auto& kv : p.dict_ptr()->items) d->set(kv.first, kv.second);
      }
      for (const auto& kv : a.keyword) d->set(kv.first, kv.second);
      return Value(std::move(d));
    };
    g.set("namespace", Value::function("namespace", [make_dict](CallArgs& a) { return make_dict(a, true); }));
    g.set("dict", Value::function("dict", [make_dict](CallArgs& a) { return make_dict(a, false); }));
    g.set("raise_exception", Value::function("raise_exception", [](CallArgs& a) -> Value {
      value_error(a.positional.empty() ? std::string("raise_exception() called") : to_str(a.positional[0]));
    }));
    const std::optional<int64_t> fixed = opt_.fixed_time;
    g.set("strftime_now", Value::function("strftime_now", [fixed](CallArgs& a) {
      const Value* fmt = a.get(0, "format");
      if (!fmt || !fmt->is_string()) value_error("strftime_now() needs a format string");
      if (fmt->str().size() > 256) value_error("strftime_now() format too long");
      std::tm tm{};
      if (fixed) {
        std::time_t t = static_cast<std::time_t>(*fixed);
        gmtime_r(&t, &tm);
      } else {
        std::time_t t = std::time(nullptr);
        localtime_r(&t, &tm);
      }
      char buf[2048];
      size_t n = std::strftime(buf, sizeof(buf), fmt->str().c_str(), &tm);
      return Value(std::string(buf, n));
    }));
  }

  // ------------------------------------------------------------ statements
  Flow exec(const StmtList& body, const FramePtr& frame, std::string& out) {
    for (const auto& s : body) {
      Flow f = exec_stmt(*s, frame, out);
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

  Flow exec_stmt(const Stmt& s, const FramePtr& frame, std::string& out) {
    NestGuard guard(nesting_, s.pos);
    step(s.pos);
    switch (s.kind) {
      case StmtKind::kText:
        emit(out, s.text, s.pos);
        return Flow::kNormal;
      case StmtKind::kPrint: {
        Value v = eval(*s.expr, frame);
        if (v.is_string()) {
          emit(out, v.str(), s.pos);
        } else {
          std::string text = stringify(v, s.expr->pos);
          emit(out, text, s.pos);
        }
        return Flow::kNormal;
      }
      case StmtKind::kIf:
        for (size_t i = 0; i < s.conds.size(); ++i) {
          if (eval(*s.conds[i], frame).truthy()) return exec(s.bodies[i], frame, out);
        }
        if (s.bodies.size() > s.conds.size()) return exec(s.bodies.back(), frame, out);
        return Flow::kNormal;
      case StmtKind::kFor:
        exec_for(s, frame, out);
        return Flow::kNormal;
      case StmtKind::kSet:
        assign(*s.target, eval(*s.expr, frame), frame);
        return Flow::kNormal;
      case StmtKind::kSetBlock: {
        std::string captured;
        exec(s.body, child_of(frame, scope_for(s.body, {}, frame.get())), captured);
        assign(*s.target, apply_filters(s.filters, Value(std::move(captured)), frame), frame);
        return Flow::kNormal;
      }
      case StmtKind::kMacro:
        frame->set(s.text, make_macro(s, frame));
        return Flow::kNormal;
      case StmtKind::kCallBlock:
        exec_call_block(s, frame, out);
        return Flow::kNormal;
      case StmtKind::kFilterBlock: {
        std::string captured;
        exec(s.body, child_of(frame, scope_for(s.body, {}, frame.get())), captured);
        Value v = apply_filters(s.filters, Value(std::move(captured)), frame);
        emit(out, stringify(v, s.pos), s.pos);
        return Flow::kNormal;
      }
      case StmtKind::kWith: {
        std::vector<std::string> names;
        for (const auto& t : s.targets) target_names(*t, names);
        auto inner = child_of(frame, scope_for(s.body, names, frame.get()));
        for (size_t i = 0; i < s.targets.size(); ++i) assign(*s.targets[i], eval(*s.exprs[i], frame), inner);
        return exec(s.body, inner, out);
      }
      case StmtKind::kBreak:
        return Flow::kBreak;
      case StmtKind::kContinue:
        return Flow::kContinue;
      case StmtKind::kDo:
        eval(*s.expr, frame);
        return Flow::kNormal;
      case StmtKind::kBody:  // Hugging Face compiles {% generation %} to a call block: a new scope
        return exec(s.body, child_of(frame, scope_for(s.body, {}, frame.get())), out);
    }
    return Flow::kNormal;
  }

  std::string stringify(const Value& v, SourcePos pos) {
    try {
      return to_str(v);
    } catch (const ValueError& e) {
      fail_at(pos, e.message);
    }
  }

  Value apply_filters(const std::vector<ExprPtr>& filters, Value v, const FramePtr& frame) {
    for (const auto& f : filters) {
      CallArgs args = eval_args(*f, 1, frame);
      try {
        v = apply_filter(f->name, v, args);
      } catch (const ValueError& e) {
        fail_at(f->pos, e.message);
      }
    }
    return v;
  }

  void exec_for(const Stmt& s, const FramePtr& frame, std::string& out) {
    Value seq = eval(*s.expr, frame);
    std::vector<Value> items;
    try {
      items = iterate(seq);
    } catch (const ValueError& e) {
      fail_at(s.expr->pos, e.message);
    }
    if (s.cond) {
      std::vector<Value> kept;
      for (auto& item : items) {
        auto probe = child_of(frame);
        assign(*s.target, item, probe);
        if (eval(*s.cond, probe).truthy()) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      exec(s.else_body, child_of(frame, scope_for(s.else_body, {}, frame.get())), out);
      return;
    }
    std::vector<std::string> params{"loop"};
    target_names(*s.target, params);
    const ScopeInfo* body_scope = scope_for(s.body, params, frame.get());
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      auto iter = child_of(frame, body_scope);
      auto loop = std::make_shared<DictData>();
      loop->set("index", Value(i + 1));
      loop->set("index0", Value(i));
      loop->set("revindex", Value(n - i));
      loop->set("revindex0", Value(n - i - 1));
      loop->set("first", Value(i == 0));
      loop->set("last", Value(i == n - 1));
      loop->set("length", Value(n));
      loop->set("depth", Value(int64_t{1}));
      loop->set("depth0", Value(int64_t{0}));
      if (i > 0) loop->set("previtem", items[static_cast<size_t>(i - 1)]);
      if (i + 1 < n) loop->set("nextitem", items[static_cast<size_t>(i + 1)]);
      loop->set("cycle", Value::function("cycle", [i](CallArgs& a) {
        if (a.positional.empty()) value_error("no items for cycling given");
        return a.positional[static_cast<size_t>(i) % a.positional.size()];
      }));
      iter->set("loop", Value(std::move(loop)));
      assign(*s.target, items[static_cast<size_t>(i)], iter);
      if (exec(s.body, iter, out) == Flow::kBreak) break;
    }
  }

  void assign(const Expr& target, const Value& v, const FramePtr& frame) {
    switch (target.kind) {
      case ExprKind::kName:
        frame->set(target.name, v);
        return;
      case ExprKind::kGetAttr: {
        Value obj = eval(*target.args[0], frame);
        if (!obj.is_namespace()) fail_at(target.pos, "cannot assign attribute on non-namespace object");
        try {
          checked_depth(v, obj.dict_ptr().get());
          obj.dict_ptr()->set(target.name, v);
        } catch (const ValueError& e) {
          fail_at(target.pos, e.message);
        }
        return;
      }
      case ExprKind::kTuple: {
        if (!v.is_list()) fail_at(target.pos, std::string("cannot unpack non-iterable ") + v.type_name() + " object");
        const auto& items = v.items();
        if (items.size() != target.args.size()) {
          fail_at(target.pos, std::string(items.size() > target.args.size() ? "too many" : "not enough") +
                                  " values to unpack (expected " + std::to_string(target.args.size()) + ", got " +
                                  std::to_string(items.size()) + ")");
        }
        for (size_t i = 0; i < items.size(); ++i) assign(*target.args[i], items[i], frame);
        return;
      }
      default:
        fail_at(target.pos, "cannot assign to this expression");
    }
  }

  Value make_macro(const Stmt& m, const FramePtr& frame) {
    std::weak_ptr<Frame> closure = frame;  // weak: the macro is stored in that frame (no cycle)
    const Stmt* def = &m;
    return Value::function(m.text, [this, def, closure](CallArgs& a) { return call_macro(*def, closure, a); });
  }

  Value call_macro(const Stmt& m, const std::weak_ptr<Frame>& closure, CallArgs& a) {
    FramePtr parent = closure.lock();
    if (!parent) value_error("macro '" + m.text + "' called after its scope ended");
    if (call_depth_ >= opt_.max_call_depth) {
      value_error("macro '" + m.text + "' nested deeper than " + std::to_string(opt_.max_call_depth) + " calls");
    }
    struct CallGuard {
      int& d;
      explicit CallGuard(int& x) : d(x) { ++d; }
      ~CallGuard() { --d; }
    } guard(call_depth_);
    std::vector<std::string> params = m.params;
    params.insert(params.end(), {"varargs", "kwargs", "caller"});
    auto frame = child_of(parent, scope_for(m.body, params, parent.get()));
    std::vector<bool> used(a.keyword.size(), false);
    for (size_t i = 0; i < m.params.size(); ++i) {
      const std::string& p = m.params[i];
      if (i < a.positional.size()) {
        frame->set(p, a.positional[i]);
        continue;
      }
      bool found = false;
      for (size_t k = 0; k < a.keyword.size(); ++k) {
        if (a.keyword[k].first == p) {
          frame->set(p, a.keyword[k].second);
          used[k] = found = true;
        }
      }
      if (!found) frame->set(p, m.defaults[i] ? eval(*m.defaults[i], frame) : Value::undefined(p));
    }
    std::vector<Value> varargs;
    for (size_t i = m.params.size(); i < a.positional.size(); ++i) varargs.push_back(a.positional[i]);
    frame->set("varargs", Value::list(std::move(varargs), true));
    auto kwargs = std::make_shared<DictData>();
    for (size_t k = 0; k < a.keyword.size(); ++k) {
      if (used[k]) continue;
      if (a.keyword[k].first == "caller") {
        frame->set("caller", a.keyword[k].second);
      } else {
        kwargs->set(a.keyword[k].first, a.keyword[k].second);
      }
    }
    frame->set("kwargs", Value(std::move(kwargs)));
    std::string out;
    exec(m.body, frame, out);
    return Value(std::move(out));
  }

  void exec_call_block(const Stmt& s, const FramePtr& frame, std::string& out) {
    const Expr& call = *s.expr;
    Value callee = eval(*call.args[0], frame);
    CallArgs args = eval_args(call, 1, frame);
    std::weak_ptr<Frame> closure = frame;
    const Stmt* def = &s;
    args.keyword.emplace_back("caller", Value::function("caller", [this, def, closure](CallArgs& a) {
      return call_macro(*def, closure, a);
    }));
    Value result = invoke(callee, args, call.pos, call.args[0].get());
    emit(out, stringify(result, s.pos), s.pos);
  }

  // ------------------------------------------------------------ expressions
  CallArgs eval_args(const Expr& e, size_t first, const FramePtr& frame) {
    CallArgs args;
    for (size_t i = first; i < e.args.size(); ++i) args.positional.push_back(eval(*e.args[i], frame));
    for (const auto& kv : e.kwargs) args.keyword.emplace_back(kv.first, eval(*kv.second, frame));
    return args;
  }

  Value invoke(const Value& callee, CallArgs& args, SourcePos pos, const Expr* callee_expr) {
    if (!callee.is_callable()) {
      if (callee.is_undefined()) {
        std::string what = callee.undefined_name().empty() && callee_expr ? callee_expr->name : callee.undefined_name();
        fail_at(pos, "'" + what + "' is undefined");
      }
      fail_at(pos, std::string("'") + callee.type_name() + "' object is not callable");
    }
    try {
      return callee.fn_ptr()->fn(args);
    } catch (const ValueError& e) {
      fail_at(pos, e.message);
    }
  }

  Value eval(const Expr& e, const FramePtr& frame) {
    NestGuard guard(nesting_, e.pos);
    step(e.pos);
    try {
      return eval_inner(e, frame);
    } catch (const ValueError& err) {
      fail_at(e.pos, err.message);
    }
  }

  Value eval_inner(const Expr& e, const FramePtr& frame) {
    switch (e.kind) {
      case ExprKind::kLiteral:
        return e.literal;
      case ExprKind::kName: {
        const Value* v = frame->lookup(e.name);
        return v ? *v : Value::undefined(e.name);
      }
      case ExprKind::kList:
      case ExprKind::kTuple: {
        std::vector<Value> items;
        items.reserve(e.args.size());
        for (const auto& a : e.args) items.push_back(eval(*a, frame));
        return Value::list(std::move(items), e.kind == ExprKind::kTuple);
      }
      case ExprKind::kDict: {
        auto d = std::make_shared<DictData>();
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          Value k = eval(*e.args[i], frame);
          if (!k.is_string()) fail_at(e.args[i]->pos, "dict keys must be strings");
          d->set(k.str(), eval(*e.args[i + 1], frame));
        }
        return Value(std::move(d));
      }
      case ExprKind::kGetAttr:
        return get_attr(eval(*e.args[0], frame), e.name);
      case ExprKind::kGetItem: {
        Value obj = eval(*e.args[0], frame);
        return get_item(obj, eval(*e.args[1], frame));
      }
      case ExprKind::kSlice: {
        Value obj = eval(*e.args[0], frame);
        Value parts[3];
        for (int i = 0; i < 3; ++i) parts[i] = e.args[1 + i] ? eval(*e.args[1 + i], frame) : Value::none();
        return slice_value(obj, parts[0], parts[1], parts[2]);
      }
      case ExprKind::kCall: {
        Value callee = eval(*e.args[0], frame);
        CallArgs args = eval_args(e, 1, frame);
        return invoke(callee, args, e.pos, e.args[0].get());
      }
      case ExprKind::kFilter: {
        Value input = eval(*e.args[0], frame);
        CallArgs args = eval_args(e, 1, frame);
        return apply_filter(e.name, input, args);
      }
      case ExprKind::kTest: {
        Value input = eval(*e.args[0], frame);
        CallArgs args = eval_args(e, 1, frame);
        return Value(apply_test(e.name, input, args) != e.negated);
      }
      case ExprKind::kNot:
        return Value(!eval(*e.args[0], frame).truthy());
      case ExprKind::kNeg:
        return negate(eval(*e.args[0], frame));
      case ExprKind::kPos: {
        Value v = eval(*e.args[0], frame);
        if (!v.is_number()) value_error(std::string("bad operand type for unary +: '") + v.type_name() + "'");
        return v.is_bool() ? Value(int64_t{v.as_bool()}) : v;
      }
      case ExprKind::kBinary: {
        Value a = eval(*e.args[0], frame);
        Value b = eval(*e.args[1], frame);
        return binary_op(e.op, a, b);
      }
      case ExprKind::kConcat: {
        std::string s;
        for (const auto& a : e.args) {
          Value v = eval(*a, frame);
          s += v.is_string() ? v.str() : to_str(v);
          check_string_size(s.size());
        }
        return Value(std::move(s));
      }
      case ExprKind::kAnd: {
        Value a = eval(*e.args[0], frame);
        return a.truthy() ? eval(*e.args[1], frame) : a;
      }
      case ExprKind::kOr: {
        Value a = eval(*e.args[0], frame);
        return a.truthy() ? a : eval(*e.args[1], frame);
      }
      case ExprKind::kCompare: {
        Value left = eval(*e.args[0], frame);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.args[i + 1], frame);
          if (!compare(e.ops[i], left, right)) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case ExprKind::kCondition: {
        if (eval(*e.args[1], frame).truthy()) return eval(*e.args[0], frame);
        return e.args[2] ? eval(*e.args[2], frame) : Value::undefined();
      }
    }
    return Value::undefined();
  }

  static bool contains(const Value& container, const Value& item) {
    if (container.is_string()) {
      if (!item.is_string()) value_error(std::string("'in <string>' requires string as left operand, not ") + item.type_name());
      return container.str().find(item.str()) != std::string::npos;
    }
    if (container.is_dict()) return item.is_string() && container.dict_ptr()->find(item.str()) != nullptr;
    if (container.is_list()) {
      for (const auto& v : container.items()) {
        if (values_equal(v, item)) return true;
      }
      return false;
    }
    if (container.is_undefined()) return false;
    value_error(std::string("argument of type '") + container.type_name() + "' is not iterable");
  }

  static bool compare(CompareOp op, const Value& a, const Value& b) {
    switch (op) {
      case CompareOp::kEq: return values_equal(a, b);
      case CompareOp::kNe: return !values_equal(a, b);
      case CompareOp::kLt: return values_less(a, b);
      case CompareOp::kLe: return !values_less(b, a);
      case CompareOp::kGt: return values_less(b, a);
      case CompareOp::kGe: return !values_less(a, b);
      case CompareOp::kIn: return contains(b, a);
      case CompareOp::kNotIn: return !contains(b, a);
    }
    return false;
  }

  const RenderOptions& opt_;
  std::unordered_map<const StmtList*, ScopeInfo> scopes_;
  uint64_t steps_ = 0;
  int nesting_ = 0;
  int call_depth_ = 0;
};

}  // namespace

std::string interpret(const StmtList& body, const Value& context, const RenderOptions& options) {
  return Interpreter(options).run(body, context);
}

}  // namespace edgellm::jinja
