// The printed forms of both IRs: deterministic (no pointers, names as given), with
// as few parentheses as precedence allows, and parsed back exactly by ir/parser.h.
#pragma once

#include <string>

#include "ir/graph.h"
#include "ir/ir.h"
#include "ir/loop_ir.h"

namespace ks {

std::string print_expr(const Expr &e);
std::string print_stmt(const Stmt &s, int indent = 0);
std::string print_graph(const Graph &graph);
std::string print_program(const Program &program);
/// `input x: f32[4, 8] in -1..1`
std::string print_tensor_decl(const TensorDecl &tensor);
/// The shortest text that reads back as the same double; always looks like a float.
std::string format_float(double value);

}  // namespace ks
