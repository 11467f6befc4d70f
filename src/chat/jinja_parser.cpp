#include "chat/jinja_parser.h"

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstdlib>
#include <initializer_list>

#include "chat/jinja_lexer.h"

namespace edgellm::jinja {

namespace {

const char* token_name(TokenType t) {
  switch (t) {
    case TokenType::kData: return "template text";
    case TokenType::kVarBegin: return "'{{'";
    case TokenType::kVarEnd: return "'}}'";
    case TokenType::kBlockBegin: return "'{%'";
    case TokenType::kBlockEnd: return "'%}'";
    case TokenType::kName: return "name";
    case TokenType::kString: return "string";
    case TokenType::kInt: return "integer";
    case TokenType::kFloat: return "float";
    case TokenType::kOperator: return "operator";
    case TokenType::kEof: return "end of template";
  }
  return "token";
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  StmtList parse_all() {
    std::string end;
    StmtList body = parse_body({}, &end);
    if (cur().type != TokenType::kEof) fail_at(cur().pos, "unexpected '" + end + "'");
    return body;
  }

 private:
  // ------------------------------------------------------------ token helpers
  const Token& cur() const { return toks_[i_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(i_ + n, toks_.size() - 1)]; }
  void advance() {
    if (i_ + 1 < toks_.size()) ++i_;
  }
  bool is_op(std::string_view op) const { return cur().type == TokenType::kOperator && cur().value == op; }
  bool is_name(std::string_view n) const { return cur().type == TokenType::kName && cur().value == n; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(std::string_view n) {
    if (!is_name(n)) return false;
    advance();
    return true;
  }
  [[noreturn]] void unexpected(const std::string& expected) const {
    std::string got = cur().type == TokenType::kName || cur().type == TokenType::kOperator
                          ? "'" + cur().value + "'"
                          : token_name(cur().type);
    fail_at(cur().pos, "expected " + expected + ", got " + got);
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) unexpected("'" + std::string(op) + "'");
  }
  std::string expect_name() {
    if (cur().type != TokenType::kName) unexpected("a name");
    std::string n = cur().value;
    advance();
    return n;
  }
  void expect_block_end() {
    if (cur().type != TokenType::kBlockEnd) unexpected("'%}'");
    advance();
  }

  // Bounds recursion of the parser itself (nested parentheses, `not not ...`, nested blocks).
  struct DepthGuard {
    int& depth;
    DepthGuard(int& d, int limit, SourcePos pos, const char* what) : depth(d) {
      if (++depth > limit) {
        --depth;
        fail_at(pos, std::string(what) + " nested too deeply");
      }
    }
    ~DepthGuard() { --depth; }
  };

  ExprPtr make(ExprKind kind, SourcePos pos) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->pos = pos;
    return e;
  }
  // Adds a child and keeps the subtree depth bounded (left-associative chains like 1+1+1+...
  // build deep trees without deep parser recursion).
  void add(Expr& parent, ExprPtr child) {
    if (child) {
      parent.depth = std::max(parent.depth, child->depth + 1);
      if (parent.depth > kMaxExprDepth) fail_at(parent.pos, "expression nested too deeply");
    }
    parent.args.push_back(std::move(child));
  }
  void add_kwarg(Expr& parent, std::string name, ExprPtr child) {
    parent.depth = std::max(parent.depth, child->depth + 1);
    if (parent.depth > kMaxExprDepth) fail_at(parent.pos, "expression nested too deeply");
    parent.kwargs.emplace_back(std::move(name), std::move(child));
  }
  ExprPtr unary(ExprKind kind, SourcePos pos, ExprPtr operand) {
    auto e = make(kind, pos);
    add(*e, std::move(operand));
    return e;
  }
  ExprPtr binary(ExprKind kind, SourcePos pos, ExprPtr a, ExprPtr b) {
    auto e = make(kind, pos);
    add(*e, std::move(a));
    add(*e, std::move(b));
    return e;
  }

  // ------------------------------------------------------------ statements
  StmtList parse_body(std::initializer_list<std::string_view> end_tags, std::string* which) {
    DepthGuard guard(block_depth_, kMaxBlockDepth, cur().pos, "blocks");
    StmtList body;
    while (true) {
      const Token& t = cur();
      switch (t.type) {
        case TokenType::kData: {
          auto s = std::make_unique<Stmt>();
          s->kind = StmtKind::kText;
          s->pos = t.pos;
          s->text = t.value;
          body.push_back(std::move(s));
          advance();
          break;
        }
        case TokenType::kVarBegin: {
          auto s = std::make_unique<Stmt>();
          s->kind = StmtKind::kPrint;
          s->pos = t.pos;
          advance();
          s->expr = parse_tuple(true);
          if (cur().type != TokenType::kVarEnd) unexpected("'}}'");
          advance();
          body.push_back(std::move(s));
          break;
        }
        case TokenType::kBlockBegin: {
          const Token& name = peek();
          if (name.type != TokenType::kName) {
            advance();
            unexpected("a statement name");
          }
          if (std::find(end_tags.begin(), end_tags.end(), name.value) != end_tags.end()) {
            advance();
            advance();
            *which = name.value;
            return body;
          }
          if (name.value.rfind("end", 0) == 0 || name.value == "elif" || name.value == "else") {
            std::string expected;
            for (auto e : end_tags) expected += (expected.empty() ? "'" : " or '") + std::string(e) + "'";
            fail_at(name.pos, "unexpected '" + name.value + "'" +
                                  (expected.empty() ? std::string() : ", expected " + expected));
          }
          body.push_back(parse_statement());
          break;
        }
        case TokenType::kEof: {
          if (end_tags.size() != 0) {
            fail_at(t.pos, "unexpected end of template, expected '" + std::string(*(end_tags.end() - 1)) + "'");
          }
          *which = "";
          return body;
        }
        default:
          unexpected("template text or a tag");
      }
    }
  }

  // After a closing tag name: `%}` (jinja2 also allows the macro name after endmacro).
  void finish_end_tag() {
    if (cur().type == TokenType::kName) advance();
    expect_block_end();
  }

  StmtPtr parse_statement() {
    advance();  // {%
    const SourcePos pos = cur().pos;
    const std::string tag = cur().value;
    advance();
    auto s = std::make_unique<Stmt>();
    s->pos = pos;
    std::string end;
    if (tag == "if") {
      s->kind = StmtKind::kIf;
      s->conds.push_back(parse_tuple(false));
      expect_block_end();
      while (true) {
        s->bodies.push_back(parse_body({"elif", "else", "endif"}, &end));
        if (end == "elif") {
          s->conds.push_back(parse_tuple(false));
          expect_block_end();
          continue;
        }
        if (end == "else") {
          expect_block_end();
          s->bodies.push_back(parse_body({"endif"}, &end));
        }
        expect_block_end();
        break;
      }
    } else if (tag == "for") {
      s->kind = StmtKind::kFor;
      s->target = parse_assign_target(false);
      if (!skip_name("in")) unexpected("'in'");
      s->expr = parse_tuple(false, /*stop_at_if=*/true);
      if (skip_name("if")) s->cond = parse_expression(true);
      if (is_name("recursive")) fail_at(cur().pos, "recursive for loops are not supported");
      expect_block_end();
      ++loop_depth_;
      s->body = parse_body({"else", "endfor"}, &end);
      --loop_depth_;
      if (end == "else") {
        expect_block_end();
        s->else_body = parse_body({"endfor"}, &end);
      }
      expect_block_end();
    } else if (tag == "set") {
      s->target = parse_assign_target(true);
      if (skip_op("=")) {
        s->kind = StmtKind::kSet;
        s->expr = parse_tuple(true);
        expect_block_end();
      } else {
        s->kind = StmtKind::kSetBlock;
        if (s->target->kind != ExprKind::kName && s->target->kind != ExprKind::kGetAttr) {
          fail_at(pos, "a block set needs a single target");
        }
        parse_filter_chain(s->filters);
        expect_block_end();
        s->body = parse_body({"endset"}, &end);
        expect_block_end();
      }
    } else if (tag == "macro") {
      s->kind = StmtKind::kMacro;
      s->text = expect_name();
      parse_signature(*s);
      expect_block_end();
      int saved = loop_depth_;
      loop_depth_ = 0;
      s->body = parse_body({"endmacro"}, &end);
      loop_depth_ = saved;
      finish_end_tag();
    } else if (tag == "call") {
      s->kind = StmtKind::kCallBlock;
      if (is_op("(")) parse_signature(*s);
      s->expr = parse_expression(true);
      if (s->expr->kind != ExprKind::kCall) fail_at(pos, "expected a call after {% call %}");
      expect_block_end();
      s->body = parse_body({"endcall"}, &end);
      expect_block_end();
    } else if (tag == "filter") {
      s->kind = StmtKind::kFilterBlock;
      parse_filter_chain(s->filters, /*leading_pipe=*/false);
      expect_block_end();
      s->body = parse_body({"endfilter"}, &end);
      expect_block_end();
    } else if (tag == "with") {
      s->kind = StmtKind::kWith;
      while (cur().type != TokenType::kBlockEnd) {
        if (!s->targets.empty()) expect_op(",");
        s->targets.push_back(parse_assign_target(false));
        expect_op("=");
        s->exprs.push_back(parse_expression(true));
      }
      expect_block_end();
      s->body = parse_body({"endwith"}, &end);
      expect_block_end();
    } else if (tag == "generation") {
      // Hugging Face's AssistantTracker extension: marks assistant text; renders its body.
      s->kind = StmtKind::kBody;
      expect_block_end();
      s->body = parse_body({"endgeneration"}, &end);
      expect_block_end();
    } else if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail_at(pos, "'" + tag + "' outside of a loop");
      s->kind = tag == "break" ? StmtKind::kBreak : StmtKind::kContinue;
      expect_block_end();
    } else if (tag == "do") {
      s->kind = StmtKind::kDo;
      s->expr = parse_tuple(true);
      expect_block_end();
    } else {
      fail_at(pos, "unknown tag '" + tag + "'");
    }
    return s;
  }

  // (a, b=default, ...) of a macro or call block.
  void parse_signature(Stmt& s) {
    expect_op("(");
    while (!is_op(")")) {
      if (!s.params.empty()) expect_op(",");
      if (is_op(")")) break;
      s.params.push_back(expect_name());
      if (skip_op("=")) {
        s.defaults.push_back(parse_expression(true));
      } else {
        s.defaults.push_back(nullptr);
      }
    }
    expect_op(")");
  }

  void parse_filter_chain(std::vector<ExprPtr>& filters, bool leading_pipe = true) {
    bool first = true;
    while ((first && !leading_pipe) || is_op("|")) {
      if (!(first && !leading_pipe)) advance();
      first = false;
      auto f = make(ExprKind::kFilter, cur().pos);
      f->args.push_back(nullptr);
      parse_filter_name_and_args(*f);
      filters.push_back(std::move(f));
    }
  }

  // name | name.attr | (a, b) | a, b — the left side of `for` and `set`.
  ExprPtr parse_assign_target(bool allow_attr) {
    const SourcePos pos = cur().pos;
    auto single = [&]() -> ExprPtr {
      if (skip_op("(")) {
        auto t = parse_assign_target(false);
        expect_op(")");
        return t;
      }
      auto n = make(ExprKind::kName, cur().pos);
      n->name = expect_name();
      if (allow_attr && is_op(".")) {
        advance();
        auto a = make(ExprKind::kGetAttr, n->pos);
        a->name = expect_name();
        add(*a, std::move(n));
        return a;
      }
      return n;
    };
    auto first = single();
    if (!is_op(",")) return first;
    auto tuple = make(ExprKind::kTuple, pos);
    add(*tuple, std::move(first));
    while (skip_op(",")) {
      if (cur().type != TokenType::kName && !is_op("(")) break;
      add(*tuple, single());
    }
    return tuple;
  }

  // ------------------------------------------------------------ expressions
  bool at_expression_end() const {
    const auto t = cur().type;
    return t == TokenType::kVarEnd || t == TokenType::kBlockEnd || t == TokenType::kEof || is_op(")") ||
           is_op("]") || is_op("}") || is_op("=");
  }

  // expr, expr, ... → a tuple; a single expression without a comma stays itself.
  ExprPtr parse_tuple(bool with_condexpr, bool stop_at_if = false) {
    const SourcePos pos = cur().pos;
    auto first = parse_expression(with_condexpr);
    if (!is_op(",")) return first;
    auto tuple = make(ExprKind::kTuple, pos);
    add(*tuple, std::move(first));
    while (skip_op(",")) {
      if (at_expression_end() || (stop_at_if && is_name("if"))) break;
      add(*tuple, parse_expression(with_condexpr));
    }
    return tuple;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(expr_depth_, kMaxExprDepth, cur().pos, "expression");
    auto e = parse_or();
    if (!with_condexpr) return e;
    while (is_name("if")) {
      const SourcePos pos = cur().pos;
      advance();
      auto cond = make(ExprKind::kCondition, pos);
      auto test = parse_or();
      add(*cond, std::move(e));
      add(*cond, std::move(test));
      if (skip_name("else")) {
        add(*cond, parse_expression(true));
      } else {
        add(*cond, nullptr);
      }
      e = std::move(cond);
    }
    return e;
  }

  ExprPtr parse_or() {
    auto e = parse_and();
    while (is_name("or")) {
      const SourcePos pos = cur().pos;
      advance();
      e = binary(ExprKind::kOr, pos, std::move(e), parse_and());
    }
    return e;
  }

  ExprPtr parse_and() {
    auto e = parse_not();
    while (is_name("and")) {
      const SourcePos pos = cur().pos;
      advance();
      e = binary(ExprKind::kAnd, pos, std::move(e), parse_not());
    }
    return e;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(expr_depth_, kMaxExprDepth, cur().pos, "expression");
      const SourcePos pos = cur().pos;
      advance();
      return unary(ExprKind::kNot, pos, parse_not());
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const SourcePos pos = cur().pos;
    auto first = parse_math1();
    ExprPtr cmp;
    while (true) {
      CompareOp op;
      if (is_op("==")) op = CompareOp::kEq;
      else if (is_op("!=")) op = CompareOp::kNe;
      else if (is_op("<")) op = CompareOp::kLt;
      else if (is_op("<=")) op = CompareOp::kLe;
      else if (is_op(">")) op = CompareOp::kGt;
      else if (is_op(">=")) op = CompareOp::kGe;
      else if (is_name("in")) op = CompareOp::kIn;
      else if (is_name("not") && peek().type == TokenType::kName && peek().value == "in") {
        advance();
        op = CompareOp::kNotIn;
      } else {
        break;
      }
      advance();
      if (!cmp) {
        cmp = make(ExprKind::kCompare, pos);
        add(*cmp, std::move(first));
      }
      cmp->ops.push_back(op);
      add(*cmp, parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr parse_math1() {
    auto e = parse_concat();
    while (is_op("+") || is_op("-")) {
      auto b = make(ExprKind::kBinary, cur().pos);
      b->op = is_op("+") ? BinaryOp::kAdd : BinaryOp::kSub;
      advance();
      add(*b, std::move(e));
      add(*b, parse_concat());
      e = std::move(b);
    }
    return e;
  }

  ExprPtr parse_concat() {
    const SourcePos pos = cur().pos;
    auto e = parse_math2();
    if (!is_op("~")) return e;
    auto c = make(ExprKind::kConcat, pos);
    add(*c, std::move(e));
    while (skip_op("~")) add(*c, parse_math2());
    return c;
  }

  ExprPtr parse_math2() {
    auto e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      auto b = make(ExprKind::kBinary, cur().pos);
      b->op = is_op("*") ? BinaryOp::kMul : is_op("/") ? BinaryOp::kDiv : is_op("//") ? BinaryOp::kFloorDiv : BinaryOp::kMod;
      advance();
      add(*b, std::move(e));
      add(*b, parse_pow());
      e = std::move(b);
    }
    return e;
  }

  ExprPtr parse_pow() {
    auto e = parse_unary(true);
    while (is_op("**")) {
      auto b = make(ExprKind::kBinary, cur().pos);
      b->op = BinaryOp::kPow;
      advance();
      add(*b, std::move(e));
      add(*b, parse_unary(true));
      e = std::move(b);
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(expr_depth_, kMaxExprDepth, cur().pos, "expression");
    const SourcePos pos = cur().pos;
    ExprPtr e;
    if (is_op("-")) {
      advance();
      e = unary(ExprKind::kNeg, pos, parse_unary(false));
    } else if (is_op("+")) {
      advance();
      e = unary(ExprKind::kPos, pos, parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr literal(SourcePos pos, Value v) {
    auto e = make(ExprKind::kLiteral, pos);
    e->literal = std::move(v);
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    const SourcePos pos = t.pos;
    switch (t.type) {
      case TokenType::kName: {
        std::string n = t.value;
        advance();
        if (n == "true" || n == "True") return literal(pos, Value(true));
        if (n == "false" || n == "False") return literal(pos, Value(false));
        if (n == "none" || n == "None") return literal(pos, Value::none());
        auto e = make(ExprKind::kName, pos);
        e->name = std::move(n);
        return e;
      }
      case TokenType::kString: {
        std::string s;
        while (cur().type == TokenType::kString) {  // adjacent literals concatenate, as in Python
          s += cur().value;
          advance();
        }
        return literal(pos, Value(std::move(s)));
      }
      case TokenType::kInt: {
        errno = 0;
        char* end = nullptr;
        long long v = std::strtoll(t.value.c_str(), &end, 10);
        if (errno == ERANGE) fail_at(pos, "integer literal out of range: " + t.value);
        advance();
        return literal(pos, Value(static_cast<int64_t>(v)));
      }
      case TokenType::kFloat: {
        double v = std::strtod(t.value.c_str(), nullptr);
        advance();
        return literal(pos, Value(v));
      }
      case TokenType::kOperator:
        if (t.value == "(") {
          advance();
          if (skip_op(")")) return make(ExprKind::kTuple, pos);
          auto first = parse_expression(true);
          if (skip_op(")")) return first;
          auto tuple = make(ExprKind::kTuple, pos);
          add(*tuple, std::move(first));
          while (skip_op(",")) {
            if (is_op(")")) break;
            add(*tuple, parse_expression(true));
          }
          expect_op(")");
          return tuple;
        }
        if (t.value == "[") {
          advance();
          auto list = make(ExprKind::kList, pos);
          while (!is_op("]")) {
            if (!list->args.empty()) expect_op(",");
            if (is_op("]")) break;
            add(*list, parse_expression(true));
          }
          expect_op("]");
          return list;
        }
        if (t.value == "{") {
          advance();
          auto dict = make(ExprKind::kDict, pos);
          while (!is_op("}")) {
            if (!dict->args.empty()) expect_op(",");
            if (is_op("}")) break;
            add(*dict, parse_expression(true));
            expect_op(":");
            add(*dict, parse_expression(true));
          }
          expect_op("}");
          return dict;
        }
        break;
      default:
        break;
    }
    unexpected("an expression");
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (is_op(".")) {
        const SourcePos pos = cur().pos;
        advance();
        if (cur().type == TokenType::kInt) {
          auto item = make(ExprKind::kGetItem, pos);
          add(*item, std::move(e));
          add(*item, literal(cur().pos, Value(static_cast<int64_t>(std::strtoll(cur().value.c_str(), nullptr, 10)))));
          advance();
          e = std::move(item);
        } else {
          auto a = make(ExprKind::kGetAttr, pos);
          a->name = expect_name();
          add(*a, std::move(e));
          e = std::move(a);
        }
      } else if (is_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj) {
    const SourcePos pos = cur().pos;
    advance();  // [
    ExprPtr parts[3];
    int colons = 0;
    bool is_slice = false;
    while (!is_op("]")) {
      if (skip_op(":")) {
        if (++colons > 2) fail_at(pos, "too many ':' in slice");
        is_slice = true;
        continue;
      }
      if (parts[colons]) unexpected("']'");
      parts[colons] = parse_expression(true);
      if (!is_slice && is_op(",")) {  // d[a, b] → tuple key
        auto tuple = make(ExprKind::kTuple, parts[0]->pos);
        add(*tuple, std::move(parts[0]));
        while (skip_op(",")) {
          if (is_op("]")) break;
          add(*tuple, parse_expression(true));
        }
        parts[0] = std::move(tuple);
      }
    }
    advance();  // ]
    if (!is_slice) {
      if (!parts[0]) fail_at(pos, "empty subscript");
      auto item = make(ExprKind::kGetItem, pos);
      add(*item, std::move(obj));
      add(*item, std::move(parts[0]));
      return item;
    }
    auto slice = make(ExprKind::kSlice, pos);
    add(*slice, std::move(obj));
    for (auto& p : parts) add(*slice, std::move(p));
    return slice;
  }

  void parse_call_args(Expr& call) {
    expect_op("(");
    bool any = false;
    while (!is_op(")")) {
      if (any) expect_op(",");
      if (is_op(")")) break;
      any = true;
      if (is_op("*") || is_op("**")) fail_at(cur().pos, "*args and **kwargs in calls are not supported");
      if (cur().type == TokenType::kName && peek().type == TokenType::kOperator && peek().value == "=") {
        std::string key = cur().value;
        advance();
        advance();
        add_kwarg(call, std::move(key), parse_expression(true));
      } else {
        if (!call.kwargs.empty()) fail_at(cur().pos, "positional argument follows keyword argument");
        add(call, parse_expression(true));
      }
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto call = make(ExprKind::kCall, callee->pos);  // errors point at the callee's name
    add(*call, std::move(callee));
    parse_call_args(*call);
    return call;
  }

  void parse_filter_name_and_args(Expr& f) {
    f.name = expect_name();
    while (is_op(".")) {
      advance();
      f.name += "." + expect_name();
    }
    if (is_op("(")) parse_call_args(f);
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        auto f = make(ExprKind::kFilter, cur().pos);
        advance();
        add(*f, std::move(e));
        parse_filter_name_and_args(*f);
        e = std::move(f);
      } else if (is_name("is")) {
        auto t = make(ExprKind::kTest, cur().pos);
        advance();
        if (skip_name("not")) t->negated = true;
        add(*t, std::move(e));
        t->name = expect_name();
        while (is_op(".")) {
          advance();
          t->name += "." + expect_name();
        }
        if (is_op("(")) {
          parse_call_args(*t);
        } else if ((cur().type == TokenType::kName || cur().type == TokenType::kString ||
                    cur().type == TokenType::kInt || cur().type == TokenType::kFloat || is_op("[") || is_op("{")) &&
                   !(is_name("else") || is_name("or") || is_name("and") || is_name("if") || is_name("in") ||
                     is_name("not") || is_name("is"))) {
          add(*t, parse_postfix(parse_primary()));
        }
        e = std::move(t);
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  std::vector<Token> toks_;
  size_t i_ = 0;
  int expr_depth_ = 0;
  int block_depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

StmtList parse_template(std::string_view source) { return Parser(tokenize(source)).parse_all(); }

}  // namespace edgellm::jinja
