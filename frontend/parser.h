// Parser of the .ks operator DSL (DESIGN.md, "The DSL"). Syntax only: names are
// resolved, sizes bound and types checked by elaborate().
#pragma once

#include <memory>
#include <string>

#include "frontend/ast.h"
#include "ir/lexer.h"

namespace ks::frontend {

/// Parses one spec; throws UserError (`file:line:col: error: ...`) on bad syntax.
Spec parse_spec(const std::shared_ptr<const SourceFile> &file);

/// Parses one expression of the DSL's grammar at the stream's position (a kernel
/// body's plan writes its sizes so); throws UserError at a bad token.
AstExprPtr parse_expression(TokenStream &ts);

/// Reads a spec file from disk and parses it; a missing file is a plain UserError.
Spec load_spec(const std::string &path);

}  // namespace ks::frontend
