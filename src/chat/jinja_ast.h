// Syntax tree of a parsed Jinja template. Nodes are generic records whose fields are used per
// kind as documented on each enumerator; the interpreter switches on the kind.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_value.h"

namespace edgellm::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using StmtList = std::vector<StmtPtr>;

enum class ExprKind {
  kLiteral,   // literal
  kName,      // name
  kList,      // args = elements
  kTuple,     // args = elements
  kDict,      // args = key0, value0, key1, value1, ...
  kGetAttr,   // args[0] = object, name = attribute
  kGetItem,   // args[0] = object, args[1] = key
  kSlice,     // args[0] = object, args[1..3] = start, stop, step (each may be null)
  kCall,      // args[0] = callee, args[1..] = positional, kwargs = keyword arguments
  kFilter,    // args[0] = input (null inside {% filter %}), name = filter, args[1..], kwargs
  kTest,      // args[0] = input, name = test, args[1..] = arguments, negated = `is not`
  kNot,       // args[0]
  kNeg,       // args[0]
  kPos,       // args[0]
  kBinary,    // args[0] op args[1], op = BinaryOp
  kConcat,    // args joined with ~
  kAnd,       // args[0] and args[1]
  kOr,        // args[0] or args[1]
  kCompare,   // args[0] ops[0] args[1] ops[1] args[2] ... (chained like Python)
  kCondition, // args[0] if args[1] else args[2] (args[2] may be null: undefined)
};

enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

struct Expr {
  ExprKind kind;
  SourcePos pos;
  Value literal;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  BinaryOp op = BinaryOp::kAdd;
  std::vector<CompareOp> ops;
  bool negated = false;
  int depth = 1;  // nesting depth of this subtree, bounded by the parser
};

enum class StmtKind {
  kText,      // text
  kPrint,     // expr
  kIf,        // conds[i] guards bodies[i]; bodies has one extra entry for `else` when present
  kFor,       // target (kName or kTuple of names) in expr [if cond]: body, else_body
  kSet,       // target (kName, kTuple or kGetAttr on a namespace) = expr
  kSetBlock,  // target = rendered body, then filters applied
  kMacro,     // text = name, params/defaults, body
  kCallBlock, // expr = call (kCall node), params/defaults = caller's parameters, body = caller
  kFilterBlock, // filters applied to the rendered body
  kWith,      // targets[i] = exprs[i] in a new scope, body
  kBreak,
  kContinue,
  kDo,        // expr evaluated, result discarded
  kBody,      // a plain nested body ({% generation %}): body rendered in the same scope
};

struct Stmt {
  StmtKind kind;
  SourcePos pos;
  std::string text;
  ExprPtr expr;
  ExprPtr target;
  ExprPtr cond;
  std::vector<ExprPtr> conds;
  std::vector<StmtList> bodies;
  StmtList body;
  StmtList else_body;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // per param, null when there is no default
  std::vector<ExprPtr> filters;   // kFilter nodes with a null input
  std::vector<ExprPtr> targets;
  std::vector<ExprPtr> exprs;
};

}  // namespace edgellm::jinja
