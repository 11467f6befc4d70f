// GBNF grammars the grammar tests share: each exercises a part of the syntax or of the engine
// (ambiguity, tail recursion, nested repetition, UTF-8 classes, inlined vs called rules).
#pragma once

namespace edgellm::grammar::test {

struct NamedGrammar {
  const char* name;
  const char* gbnf;
};

inline constexpr NamedGrammar kTestGrammars[] = {
    {"arithmetic", R"GBNF(root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
)GBNF"},
    {"json", R"GBNF(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws
array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws
string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)GBNF"},
    {"list", R"GBNF(root ::= item+
# Excludes various line break characters
item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"
)GBNF"},
    {"chess", R"GBNF(root   ::= (
    "1. " move " " move "\n"
    ([1-9] [0-9]? ". " move " " move "\n")+
)
move   ::= (pawn | nonpawn | castle) [+#]?
pawn   ::= [a-h] ([1-8] | "x" [a-h] [1-8])
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
castle ::= "O-O" "-O"?
)GBNF"},
    {"ambiguous", R"GBNF(root ::= a | b | c
a ::= [0-9]+ ("." [0-9]+)?
b ::= [0-9]+ "." [0-9]+ "e" [0-9]
c ::= x x
x ::= "ab" | "a" | "b" | ""
)GBNF"},
    {"unicode", R"GBNF(root ::= (cjk | emoji | latin | " ")* "。"?
cjk ::= [一-鿿]
emoji ::= [\U0001F600-\U0001F64F]
latin ::= [a-zA-Zà-ÿ]
)GBNF"},
    {"repetition", R"GBNF(root ::= "x"{2} "-" [ab]{1,3} "-" ("cd" | "e"){0,2} "-" [0-9]{3,} ("." item){0,4}
item ::= [a-z]{1,2}
)GBNF"},
    {"recursion", R"GBNF(root ::= list
list ::= "(" ws (elem (ws elem)*)? ws ")"
elem ::= atom | list
atom ::= [a-z]+ | "'" elem
ws ::= " "*
)GBNF"},
    {"negated", R"GBNF(root ::= "<" [^<>]* ">" (. [^.]*)? "!"
)GBNF"},
    {"nullable", R"GBNF(root ::= a b c "end"
a ::= "x"*
b ::= ("y" | "")
c ::= (a b)?
)GBNF"},
    {"keywords", R"GBNF(root ::= stmt (";" stmt)*
stmt ::= "let" " " name " = " expr | "if" " " expr " then " stmt | "return " expr | name "()"
name ::= [a-z] [a-z]*
expr ::= name | [0-9]+ | "true" | "false" | "(" expr ")"
)GBNF"},
    {"csv", R"GBNF(root ::= row ("\n" row)* "\n"?
row ::= field ("," field)*
field ::= [^,"\n]* | "\"" ([^"] | "\"\"")* "\""
)GBNF"},
};

}  // namespace edgellm::grammar::test
