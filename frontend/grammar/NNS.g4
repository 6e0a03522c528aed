// NNS.g4 - the nns trace language (see docs/Language.md).
//
// Statements end at a newline or ';'. Newlines inside () and [] are skipped by the lexer, which
// tracks bracket depth; newlines inside {} separate statements.
grammar NNS;

@lexer::members {
  int bracketDepth = 0;
}

// ---------------------------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------------------------

program : sep* (topDecl (sep+ topDecl)*)? sep* EOF ;

sep : NL | ';' ;

topDecl : paramDecl | traceDecl ;

paramDecl : 'param' name=ID ':' typeExpr ('=' init=expr)? ;

// f32, i64, bool, or f32[D, ...] with D an integer or a model dimension name.
typeExpr : elem=ID ('[' dims+=dim (',' dims+=dim)* ']')? ;

dim : INT | ID ;

traceDecl : 'trace' name=ID? block ;

block : '{' sep* (stmt (sep+ stmt)*)? sep* '}' ;

stmt
  : ifStmt
  | forStmt
  | invokeStmt
  | assignStmt
  | exprStmt
  ;

ifStmt : 'if' cond=expr then=block (NL* 'else' (elseBlock=block | elseIf=ifStmt))? ;

// `for step in steps[a:b:c] { }` over generation steps, `for i in a..b { }` or
// `for i in a..b:step { }` over integers.
forStmt : 'for' var=ID 'in' (range=rangeExpr | iter=expr) block ;

rangeExpr : lo=expr '..' hi=expr (':' step=expr)? ;

invokeStmt : 'invoke' name=ID? block ;

assignStmt : target=expr op=('=' | '+=' | '-=' | '*=' | '/=') value=expr ;

exprStmt : expr ;

// Precedence from tightest to loosest, as in Python: postfix, unary minus, * / // % @, + -,
// comparisons, not, and, or.
expr
  : primary                                                     # primaryExpr
  | expr '.' member=(ID | INT)                                  # memberExpr
  | expr '[' subscript (',' subscript)* ']'                     # indexExpr
  | expr '(' (arg (',' arg)*)? ')'                              # callExpr
  | '-' expr                                                    # negExpr
  | lhs=expr op=('*' | '/' | '//' | '%' | '@') rhs=expr        # mulExpr
  | lhs=expr op=('+' | '-') rhs=expr                            # addExpr
  | lhs=expr op=('<' | '<=' | '>' | '>=' | '==' | '!=') rhs=expr  # cmpExpr
  | 'not' expr                                                  # notExpr
  | lhs=expr op='and' rhs=expr                                     # andExpr
  | lhs=expr op='or' rhs=expr                                     # orExpr
  ;

// `(e)` groups; with a comma, or empty, it is a tuple: `(a, b)`, `(a,)`, `()`. A tuple or a list
// `[a, b]` is syntax here; Sema accepts one only as the sequence argument of cat, stack and
// broadcast_to. (One alternative for `(`, so that an error inside it stays precise.)
primary
  : ID                                                          # nameRef
  | INT                                                         # intLit
  | FLOAT                                                       # floatLit
  | STRING                                                      # stringLit
  | ('true' | 'false')                                          # boolLit
  | '(' (items+=expr (comma=',' (items+=expr (',' items+=expr)* ','?)?)?)? ')'  # parenExpr
  | '[' (items+=expr (',' items+=expr)* ','?)? ']'              # listLit
  ;

subscript
  : '*'                                                         # wildcardSub
  | lo=expr? ':' hi=expr? (':' stride=expr?)?                   # sliceSub
  | expr                                                        # indexSub
  ;

arg : (key=ID '=')? expr ;

// ---------------------------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------------------------

LPAREN : '(' { bracketDepth++; } ;
RPAREN : ')' { if (bracketDepth > 0) bracketDepth--; } ;
LBRACK : '[' { bracketDepth++; } ;
RBRACK : ']' { if (bracketDepth > 0) bracketDepth--; } ;

FLOAT
  : DIGITS '.' DIGITS EXPONENT?
  | DIGITS EXPONENT
  ;
INT : DIGITS ;
ID : [A-Za-z_] [A-Za-z0-9_]* ;
STRING : '"' (~["\\\r\n] | '\\' .)* '"' ;

NL : '\r'? '\n' { if (bracketDepth > 0) skip(); } ;
COMMENT : '#' ~[\r\n]* -> skip ;
WS : [ \t\f]+ -> skip ;
LINE_CONTINUATION : '\\' '\r'? '\n' -> skip ;

// Anything else is one bad character; the parser reports it where it stands.
ERROR_CHAR : . ;

fragment DIGITS : [0-9]+ ;
fragment EXPONENT : [eE] [+-]? DIGITS ;
